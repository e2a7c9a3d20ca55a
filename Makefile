# Zapomni — `make run` starts the stdio MCP server on the embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
# uv installs every pinned set: the test set in 9 s from nothing against pip's 62 s (decision 0038). pip,
# which comes with the venv, only brings uv itself, at the version constraints.txt pins. Byte code is compiled
# at install, as pip does: left to the first imports, the suite's first processes compiled it over and over.
INSTALL := $(UV) pip install --quiet --compile-bytecode --python $(BIN)/python
# One stamp per install set, named after the hash of pyproject.toml + constraints.txt: editing either
# reinstalls, and `make run` after `make test` finds its runtime stamp and installs nothing.
DEPS_HASH   := $(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
STAMP       := $(VENV)/.installed-runtime-$(DEPS_HASH)
TEST_STAMP  := $(VENV)/.installed-test-$(DEPS_HASH)
BENCH_STAMP := $(VENV)/.installed-bench-$(DEPS_HASH)
APPLIANCE_STAMP := $(VENV)/.installed-appliance-$(DEPS_HASH)

# Operator targets act on the Docker stack, or with RUNTIME=local on the native appliance of `make up-local`.
# With podman: COMPOSE=podman-compose (README, "The appliance with podman").
RUNTIME ?= docker
COMPOSE ?= docker compose
# ops/compose checks the compose command first (Docker without Compose v2 is said plainly) and, on podman
# without systemd, asks the health checks before `ps`.
RUN_COMPOSE := COMPOSE="$(COMPOSE)" ops/compose
ifeq ($(RUNTIME),local)
OP := ops/local zapomni
else
# Through the image's entrypoint, which hands `zapomni` the stack's password from the secrets volume.
OP := $(RUN_COMPOSE) exec -T zapomni /app/ops/docker-entrypoint.sh
endif

.PHONY: help install run test test-appliance test-properties import-fixtures lint bench bench-1m bench-appliance dist clean up down logs ps backup restore migrate export import health up-local down-local

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'
	@echo "  (backup, restore, migrate, export, import, health: add RUNTIME=local for the native appliance)"

# Install output goes to stderr: stdout may already belong to an MCP client (`make -s run`).
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) >&2

$(UV): | $(BIN)/python
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt uv >&2

# The runtime only: what `pipx install`/`uv tool install` would get, pinned. A new runtime stamp drops every
# older stamp (the test and bench sets are re-checked against the new pins too).
$(STAMP): pyproject.toml constraints.txt | $(UV)
	@echo "installing Zapomni's runtime into $(VENV) (pinned by constraints.txt)..." >&2
	@$(INSTALL) -c constraints.txt -e . >&2
	@rm -f $(VENV)/.installed-*
	@touch $@

# The suite smoke-runs the benchmarks (tests/bench), so the test set includes the bench tools.
# The console's browser tests drive Debian's chromium through playwright (never `playwright install`, which
# downloads a browser): ops/setup-chromium installs it from apt when /usr/bin/chromium is missing.
# On a fresh venv the runtime comes in the same install (one resolve), and that install leaves the runtime and
# bench stamps too: both sets are inside the test set.
$(TEST_STAMP): pyproject.toml constraints.txt | $(UV)
	@echo "installing Zapomni with the test and bench tools into $(VENV) (pinned by constraints.txt)..." >&2
	@$(INSTALL) -c constraints.txt -e '.[test,bench]' >&2
	@ops/setup-chromium
	@rm -f $(VENV)/.installed-runtime-* $(VENV)/.installed-test-* $(VENV)/.installed-bench-*
	@touch $@ $(STAMP) $(BENCH_STAMP)

# The appliance test drives the compose stack with pip's podman-compose (the `appliance` extra).
$(APPLIANCE_STAMP): $(TEST_STAMP)
	@echo "adding podman-compose to $(VENV) (pinned by constraints.txt)..." >&2
	@$(INSTALL) -c constraints.txt -e '.[test,bench,appliance]' >&2
	@rm -f $(VENV)/.installed-appliance-*
	@touch $@

$(BENCH_STAMP): $(STAMP)
	@echo "adding the benchmark tools to $(VENV) (pinned by constraints.txt)..." >&2
	@$(INSTALL) -c constraints.txt -e '.[bench]' >&2
	@rm -f $(VENV)/.installed-bench-*
	@touch $@

install: $(STAMP)  ## create .venv and install the pinned runtime only (no test or bench tools)

run: $(STAMP)  ## start the MCP server on stdin/stdout (embedded FalkorDB + ONNX embedder); installs the runtime only
	@exec $(BIN)/zapomni serve

test: lint  ## lint, then run the whole test suite (all but the container stack) on 3 workers; adds the test and bench tools
	$(BIN)/python -m pytest --ignore=tests/containers -n 3 --dist loadfile --durations=20

# The property runs of the suite (hostile strings in every tool, any text through the database) with 20 times the
# examples `make test` gives them.
test-properties: $(TEST_STAMP)  ## the property tests with 20 times the examples `make test` gives them
	ZAPOMNI_TEST_EXHAUSTIVE=1 $(BIN)/python -m pytest -m property --ignore=tests/containers -p no:cacheprovider

# The appliance as an operator runs it, in containers: podman (installed and configured by ops/setup-podman),
# stand-ins for the images no registry can give here (tests/containers/standins), then the real Dockerfile
# and compose.yaml driven end to end by tests/containers (about 9 min from a machine without podman, 3 when
# podman and the images are there; 2 cores). The first test's setup builds the image (`make up`, up to 600 s by its
# own timeout): its tests get 900 s each, not the suite's 300.
test-appliance: $(APPLIANCE_STAMP)  ## build the image and run the whole compose stack under podman, end to end
	ops/setup-podman
	CONTAINERS_CONF=$(CURDIR)/ops/podman/containers.conf tests/containers/standins/build
	CONTAINERS_CONF=$(CURDIR)/ops/podman/containers.conf $(BIN)/python -m pytest -v -p no:cacheprovider -o timeout=900 tests/containers

# mypy reads its packages and flags from pyproject.toml ([tool.mypy]): app/, tests/ and bench/, all strict.
# The files tests/fixtures/imports holds, written again by the real tools (npm's at tools/package-lock.json).
import-fixtures: $(TEST_STAMP)  ## write the import tests' input files with the real tools (needs npm and the registries)
	$(BIN)/python tests/fixtures/imports/produce.py

lint: $(TEST_STAMP)  ## static checks (ruff; mypy on app, tests and bench); adds the test and bench tools
	$(BIN)/ruff check --no-cache app tests bench healthchecks/probe ops/image-smoke.py ops/first-token.py
	$(BIN)/ruff format --check --no-cache app tests bench healthchecks/probe ops/image-smoke.py ops/first-token.py
	$(BIN)/mypy

# Every figure the README quotes comes from a file one of these writes (tests/static/test_readme_figures.py).
bench: $(BENCH_STAMP)  ## run the benchmarks (~110 min on 2 cores), results in bench/results/; adds the bench tools
	$(BIN)/python -m bench.install_size
	$(BIN)/python -m bench.cold_start
	$(BIN)/python -m bench.quality
	$(BIN)/python -m bench.relevance
	$(BIN)/python -m bench.conversations
	$(BIN)/python -m bench.scifact_mcp
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.list_pages
	$(BIN)/python -m bench.vector_recall
	$(BIN)/python -m bench.aof_rewrite
	$(BIN)/python -m bench.semantic_cache
	$(BIN)/python -m bench.foundation
	$(BIN)/python -m bench.index_repair
	$(BIN)/python -m bench.memory_ops
	$(BIN)/python -m bench.ingestion
	$(BIN)/python -m bench.large_adds
	$(BIN)/python -m bench.interactive_adds
	$(BIN)/python -m bench.job_fairness
	$(BIN)/python -m bench.graph_extraction
	$(BIN)/python -m bench.entity_dedup
	$(BIN)/python -m bench.updates --sets cases,locomo,heldout --regression
	$(BIN)/python -m bench.updates --sets "" --cost --json bench/results/updates_cost.json --output bench/results/updates_cost.md
	$(BIN)/python -m bench.graph_retrieval
	$(BIN)/python -m bench.document_formats
	$(BIN)/python -m bench.document_ingestion
	$(BIN)/python -m bench.code_index
	$(BIN)/python -m bench.graph_large_memory
	$(BIN)/python -m bench.token_verify
	$(BIN)/python -m bench.http_load
	$(BIN)/python -m bench.primary_writes
	$(BIN)/python -m bench.console
	$(BIN)/python -m bench.chat_import

# The scale curves to a million chunks (bench/results/scale.md): `make bench` stops at 300K; this adds 1M (24 GB
# of RAM is plenty; the growth to 1M without the model and two database loads of 1M vectors take the time).
# The 1M store is kept (bench/.cache/, ~6 GB) for the first answers after a cold start measured on it.
BENCH_1M_STORE := $(CURDIR)/bench/.cache/store-1m
# Hours on 2 cores: in parts if need be, on the same store: `--sizes 10000 100000 300000` first, then the whole list
# again with `--resume` (the report keeps the sizes measured and says when the rest were).
bench-1m: $(BENCH_STAMP)  ## the scale benchmark at 10K, 100K, 300K and 1M chunks, then first answers at 1M
	$(BIN)/python -m bench.scale --sizes 10000 100000 300000 1000000 --store $(BENCH_1M_STORE)
	BENCH_STORE=$(BENCH_1M_STORE) $(BIN)/python -m bench.first_answer

# The appliance's figures (bench/results/appliance.md), on the stack `make test-appliance` built and left ready.
bench-appliance: test-appliance  ## measure the appliance under podman (image, builds, starts, backup, restore)
	CONTAINERS_CONF=$(CURDIR)/ops/podman/containers.conf $(BIN)/python -m bench.appliance

# The wheel and sdist for `pipx install`/`uv tool install`, built offline by the pinned setuptools in .venv.
dist: | $(BIN)/python  ## build the wheel and sdist into dist/; installs only the pinned setuptools
	@rm -rf dist build
	@$(INSTALL) -c constraints.txt setuptools >&2
	@$(BIN)/python -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w dist . >&2
	@$(BIN)/python -c 'from setuptools import build_meta; build_meta.build_sdist("dist")' >&2
	@rm -rf build
	@ls dist/*

clean:  ## remove the virtualenv, dist/ and caches (never your data)
	rm -rf $(VENV) .pytest_cache .mypy_cache build dist *.egg-info app/*.egg-info

# --- the appliance ------------------------------------------------------------------------------

# Readiness is asked of the zapomni service itself (ops/wait-ready), the same way on Docker and podman.
up:  ## start the Docker stack (FalkorDB, Redis, Ollama + models, zapomni) and wait until it is ready
	@$(RUN_COMPOSE) up -d --build || { echo "make up: compose failed (above). No image registry here? README," \
	    "\"Without an image registry\"" >&2; exit 1; }
	COMPOSE="$(COMPOSE)" ops/wait-ready

down:  ## stop the Docker stack (volumes, i.e. your data, are kept)
	$(RUN_COMPOSE) down

logs:  ## follow the Docker stack's logs
	$(RUN_COMPOSE) logs -f --tail=200

ps:  ## show the Docker stack's services and their health
	$(RUN_COMPOSE) ps

backup: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## snapshot the database, verify it, keep the last ZAPOMNI_BACKUP_KEEP
	$(OP) backup

restore: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## restore BACKUP=<dir|name|latest> (verified; the current data is kept as a safety copy)
	@test -n "$(BACKUP)" || { echo "usage: make restore BACKUP=<backup directory, name or latest>" >&2; exit 2; }
	$(if $(filter local,$(RUNTIME)),ops/restore-local "$(BACKUP)",COMPOSE="$(COMPOSE)" ops/restore-docker "$(BACKUP)")

migrate: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## apply pending schema migrations (zapomni migrate status|--dry-run for a look first)
	$(OP) migrate apply

export: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## write every memory to OUT=<file.jsonl> (portable JSONL)
	@test -n "$(OUT)" || { echo "usage: make export OUT=<file.jsonl>" >&2; exit 2; }
	$(OP) export > "$(OUT).partial" && mv "$(OUT).partial" "$(OUT)"

import: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## add the memories of FILE=<file.jsonl> (validated first; re-runs skip what is there)
	@test -n "$(FILE)" || { echo "usage: make import FILE=<file.jsonl>" >&2; exit 2; }
	$(OP) import - < "$(FILE)"

health: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## run the readiness checks and print them
	$(OP) doctor

up-local: $(STAMP)  ## the appliance natively: supervisord runs FalkorDB, Redis and the health endpoint
	ops/up-local

down-local:  ## stop the native appliance (FalkorDB saves on the way down)
	ops/down-local
