# One venv for everything; `make lab` and `make test` each create it when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: lab test lint unit nbval notebooks bench browser clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[lab,dev]"
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

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
