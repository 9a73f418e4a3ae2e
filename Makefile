# One venv for everything; `make lab` and `make test` each create it when it is missing.
# It holds the [dev] extra (the contributors' tools), which includes [lab] (what a learner needs).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NEEDS_311 := import sys; sys.exit(sys.version_info < (3, 11))

.PHONY: lab test lint unit suite workflows stages nbval notebooks drawn bench browser dist lite serve-lite lite-test mutants mutants-sample clean python-ok upstream-pi

# Runs before every target that uses the venv (order-only: it never forces a reinstall). A .venv
# made by an older Python, or one whose Python is gone, would otherwise fail later in pip.
python-ok:
	@if [ -e $(VENV) ]; then \
	  if ! $(BIN)/python -c '$(NEEDS_311)' 2>/dev/null; then \
	    found=$$($(BIN)/python -c 'import platform; print("Python", platform.python_version())' 2>/dev/null || echo "一个已经无法运行的 Python"); \
	    echo "$(VENV) 是用 $$found 创建的，pi_course 需要 Python >= 3.11。" >&2; \
	    echo "解决：rm -rf $(VENV)，再运行 make（$(PYTHON) 太旧时加上 PYTHON=python3.12，或任何 >= 3.11 的 Python）。" >&2; \
	    exit 1; \
	  fi; \
	elif ! $(PYTHON) -c '$(NEEDS_311)' 2>/dev/null; then \
	  found=$$($(PYTHON) -c 'import platform; print("是 Python", platform.python_version())' 2>/dev/null || echo "无法运行"); \
	  echo "PYTHON=$(PYTHON) $$found，pi_course 需要 Python >= 3.11。" >&2; \
	  echo "解决：运行 make PYTHON=python3.12（或任何 >= 3.11 的 Python 的路径）。" >&2; \
	  exit 1; \
	fi

# pip is quiet (its resolver chatter helps nobody), so each stage says what it is doing first.
$(STAMP): pyproject.toml | python-ok
	@echo "make：[1/3] 用 $(PYTHON) 创建 $(VENV)（只需一次，之后一直用它）"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "make：[2/3] 升级 $(VENV) 里的 pip"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "make：[3/3] 把 pi_course 和它的 [dev] 工具装进 $(VENV)：第一次大约一分钟（JupyterLab、pytest、mypy……），装完之前不会输出"
	@$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)
	@echo "make：$(VENV) 准备好了（$$($(BIN)/python -c 'import platform; print("Python", platform.python_version())')）"

# Serves the repository root (pi_course/*.py beside notebooks/) and opens 05-0: the default URL is
# that notebook, so the browser it opens and the URL it prints (no browser here?) both land on it.
LAB_START := /lab/tree/notebooks/05-0-overview.ipynb
lab: $(STAMP)
	@echo "make lab：JupyterLab 以仓库根目录为根，打开 notebooks/05-0-overview.ipynb（Ctrl-C 停止）"
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir=. --LabApp.default_url=$(LAB_START)

lint: $(STAMP)
	$(BIN)/ruff check pi_course pi_course_here.py tests bench tools
	$(BIN)/ruff format --check pi_course pi_course_here.py tests bench tools
	$(BIN)/mypy --strict pi_course pi_course_here.py

# pytest-xdist workers for `make suite` and `make nbval` (most of their time is spent in subprocesses
# and notebook kernels): `make test WORKERS=4` on a bigger machine, WORKERS=0 to run in one process.
WORKERS ?= 2

# Runs of tests/ leave the nbval plugin out: importing it (nbformat, jupyter_client) costs each
# pytest process seconds, and the tests that need it start their own pytest with --nbval-lax.
# --dist worksteal: a worker that runs out takes queued tests from the other, so the long ones at
# the end do not leave a core idle.
NO_NBVAL := -p no:nbval

# The fast loop: everything that starts no Python process and no notebook kernel (well under 30 s).
unit: $(STAMP)
	$(BIN)/python -m pytest -q $(NO_NBVAL) -m "not slow and not browser and not notebooks" tests

# Every test but the browser's, node's, the notebook re-executions and the class-scale workflows,
# the slow ones included.
suite: $(STAMP)
	$(BIN)/python -m pytest -q $(NO_NBVAL) -n $(WORKERS) --dist worksteal -m "not browser and not notebooks and not node and not workflow" tests

# Whole workflows at class scale (marked workflow): the rules matrix (check names each rule a full
# solution breaks), the allowed-variants matrix, the seven learners' styles and their typical mistakes, a hostile class graded.
# Minutes of check runs, so make test leaves them out; .ci/run runs them after it.
workflows: $(STAMP)
	$(BIN)/python -m pytest -q $(NO_NBVAL) -n $(WORKERS) --dist worksteal -m "workflow and not browser and not notebooks" tests

# Practice copies' notebooks re-executed at every stage of the chapter (most of the suite's time
# before they moved here); .ci/run runs them after make test.
stages: $(STAMP)
	$(BIN)/python -m pytest -q $(NO_NBVAL) -n $(WORKERS) --dist worksteal -m "notebooks and not browser" tests

# --dist loadscope keeps each notebook's cells together, in order, on one kernel.
nbval: $(STAMP)
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then \
	  $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadscope --nbval --nbval-current-env -p no:randomly notebooks/; \
	else echo "no notebooks yet"; fi

test: lint suite nbval

notebooks: $(STAMP)
	$(BIN)/python tools/run_notebooks.py notebooks/*.ipynb

# The comparisons' inputs, drawn once from the reference (pi_course/course/checker/drawn.py): after any edit of
# tests/test_05_compare.py (tests/unit/test_drawn.py says when they are stale).
drawn: $(STAMP)
	$(BIN)/python tools/draw_inputs.py

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/grade.py
	$(BIN)/python bench/check.py

# The mutation score of `check` over the LAB regions: every single-point mutant of the reference's
# lesson code, each through `check 05` in a finished copy (about half an hour on 2 cores). Exits 1 when
# a mutant survives that tools/mutants_equivalent.json does not list with its reason.
mutants: $(STAMP)
	$(BIN)/python tools/mutants.py --jobs $(or $(filter-out 0,$(WORKERS)),1) --json build/mutants.json

# A fixed, evenly spread sample of them (CI: the score cannot quietly fall).
mutants-sample: $(STAMP)
	$(BIN)/python tools/mutants.py --sample 24 --jobs $(or $(filter-out 0,$(WORKERS)),1)

# Upstream Pi (pi-ai) and the Vercel AI SDK under node: tools/upstream_pi's pinned packages, then the
# tests marked node (elsewhere they skip, saying to run this).
upstream-pi: $(STAMP)
	npm ci --prefix tools/upstream_pi --no-audit --no-fund
	$(BIN)/python -m pytest -q $(NO_NBVAL) -n 0 -m node tests/integration

browser: $(STAMP)
	$(BIN)/python -m pytest -q -m "browser and not lite" tests

# The sdist and the wheel, into dist/ (what .github/workflows/release.yml publishes).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m hatchling build -t sdist -t wheel

# The offline JupyterLite edition (tools/build_lite.py finds a Python >= 3.12 for the build venv).
lite: $(STAMP)
	$(BIN)/python tools/build_lite.py

# The built site on 127.0.0.1 at a free port, its address printed (a fixed port may be taken).
serve-lite:
	@$(or $(wildcard $(BIN)/python),$(PYTHON)) tools/serve_lite.py

# Builds the site, then drives it in Chromium with every host but loopback unresolvable; prints the
# figures (build/lite-bench.json: cold start, each notebook's Run All, reference vs practice).
lite-test: lite
	$(BIN)/python -m pytest -q -m lite -p no:randomly tests/browser/test_lite.py
	@cat build/lite-bench.json

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
