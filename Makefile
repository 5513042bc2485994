# Two commands on a fresh machine with only Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Stamps are refreshed whenever pyproject.toml changes, so `git pull && make test` just works.
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP    := $(VENV)/.installed-test

.PHONY: demo test check bench lint clean n8n

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

# Bytecode is cached even where the environment says not to (PYTHONDONTWRITEBYTECODE): without
# it, collecting the suite compiles and assertion-rewrites every test module each time (~2x).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
CHECK_WORKERS ?= auto

# Everything: the fast tier as `make check` runs it, then the slow tier (real n8n, PostgreSQL,
# Chromium, service processes, kill -9, the long computations) on every core too, a test file
# to a worker and tests/n8n/ to one (`--dist loadgroup`, tests/conftest.py); both always run.
test: $(TEST_STAMP) n8n
	$(PYTEST) -m "not slow" -n $(CHECK_WORKERS) --dist loadfile; fast=$$?; \
	$(PYTEST) -m slow -n $(CHECK_WORKERS) --dist loadgroup; slow=$$?; \
	[ $$fast -eq 0 ] && [ $$slow -eq 0 ]

# The fast tier: graders, stores on SQLite, reports, CLI, web without a browser
# (docs/performance.md has its time). tests/conftest.py marks `slow` what needs PostgreSQL,
# n8n, Chromium or real service processes (tests/processes.py), and what lives in
# tests/reliability. On every core (pytest-xdist), a test file to a worker so module fixtures
# are made once; `-n auto` is a worker more than the cores here (its tests wait a third of
# their time: tests/conftest.py, pytest_xdist_auto_num_workers).
check: $(TEST_STAMP)
	$(PYTEST) -m "not slow" -n $(CHECK_WORKERS) --dist loadfile

bench: $(TEST_STAMP)
	$(BIN)/python bench/run.py

lint: $(TEST_STAMP)
	$(BIN)/ruff check exam graders tests bench

clean:
	rm -rf $(VENV) results/*.db* tests/artifacts
