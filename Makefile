# One venv for everything; `make lab` and `make test` each create it when it is missing.
# It holds the [dev] extra (the contributors' tools), which includes [lab] (what a learner needs).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NEEDS_311 := import sys; sys.exit(sys.version_info < (3, 11))

.PHONY: lab test lint unit nbval notebooks bench browser clean python-ok

# Runs before every target that uses the venv (order-only: it never forces a reinstall). A .venv
# made by an older Python, or one whose Python is gone, would otherwise fail later in pip.
python-ok:
	@if [ -e $(VENV) ]; then \
	  if ! $(BIN)/python -c '$(NEEDS_311)' 2>/dev/null; then \
	    found=$$($(BIN)/python -c 'import platform; print("Python", platform.python_version())' 2>/dev/null || echo "a Python that no longer runs"); \
	    echo "$(VENV) was made with $$found, but pi_course needs Python >= 3.11." >&2; \
	    echo "Fix: rm -rf $(VENV), then run make again (add PYTHON=python3.12, or any Python >= 3.11, if $(PYTHON) is older)." >&2; \
	    exit 1; \
	  fi; \
	elif ! $(PYTHON) -c '$(NEEDS_311)' 2>/dev/null; then \
	  found=$$($(PYTHON) -c 'import platform; print("is Python", platform.python_version())' 2>/dev/null || echo "does not run"); \
	  echo "PYTHON=$(PYTHON) $$found, but pi_course needs Python >= 3.11." >&2; \
	  echo "Fix: run make PYTHON=python3.12 (or the path of any Python >= 3.11)." >&2; \
	  exit 1; \
	fi

$(STAMP): pyproject.toml | python-ok
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Serves the repository root (pi_course/*.py beside notebooks/ in the file browser) and opens 05-0.
lab: $(STAMP)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir=. notebooks/05-0-overview.ipynb

lint: $(STAMP)
	$(BIN)/ruff check pi_course tests bench tools
	$(BIN)/ruff format --check pi_course tests bench tools
	$(BIN)/mypy --strict pi_course

unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not browser" tests

nbval: $(STAMP)
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then \
	  $(BIN)/python -m pytest -q --nbval --nbval-current-env -p no:randomly notebooks/; \
	else echo "no notebooks yet"; fi

test: lint unit nbval

notebooks: $(STAMP)
	$(BIN)/python tools/run_notebooks.py notebooks/*.ipynb

bench: $(STAMP)
	$(BIN)/python bench/run.py

browser: $(STAMP)
	$(BIN)/python -m pytest -q -m browser tests

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
