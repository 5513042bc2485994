# Two commands on a fresh machine with only Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Stamps are refreshed whenever pyproject.toml changes, so `git pull && make test` just works.
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP    := $(VENV)/.installed-test

.PHONY: demo test bench lint clean n8n

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(RUNTIME_STAMP)

demo: $(RUNTIME_STAMP)
	$(BIN)/exam demo

# The real-n8n tests (tests/n8n) need n8n installed: cached in ~/.cache/agent-exam/n8n, so
# this is a stamp check after the first time (a few minutes then).
n8n:
	tests/n8n/install.sh

test: $(TEST_STAMP) n8n
	$(BIN)/python -m pytest

bench: $(TEST_STAMP)
	$(BIN)/python bench/run.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check exam graders tests bench

clean:
	rm -rf $(VENV) results/*.db* tests/artifacts
