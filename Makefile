# batchlab: two commands on a fresh machine with Python 3.11 and make.
#   make lab    set up .venv and open the notebooks in JupyterLab
#   make test   set up .venv and run every test (unit, doctests, nbval)
# CI (.ci/run) adds `make test-jax-new` (Python 3.12 + the newest jax).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.batchlab-installed
export PATH := $(abspath $(BIN)):$(PATH)
export TQDM_DISABLE ?= 1
# matplotlib's font cache beside the venv that wrote it: a shared ~/.cache/matplotlib written by
# another install (a removed venv) names font files that are gone, and the missing-font warnings
# then land in notebook outputs as stderr (nbval fails on them)
export MPLCONFIGDIR ?= $(abspath $(VENV))/.mplconfig

.PHONY: setup lab test unit notebooks student lint benchmarks browser-test clean mutants
.PHONY: test-jax-new setup-other-jax device-wheels device-notebooks

# On a lent accelerator (TPU/GPU host without the kit installed): `make device-wheels` here, carry
# .whl-tpu there, then `. scripts/device_env.sh && make device-notebooks PYTHON_DEVICE=python3`.
# Every notebook runs in a fresh process (in-process IPython: no kernel, no socket), one at a time
# (one process holds a TPU); the executed copies and summary.json go to notebooks/tpu/.
DEVICE_WHEELS = nbclient==0.11.0 nbformat==5.11.1 jupyter_client==8.10.0 jupyter_core==5.9.1 \
  ipykernel==7.4.0 ipython==9.18.1 ipython_pygments_lexers==1.1.1 ipywidgets==8.1.9 \
  widgetsnbextension==4.0.16 jupyterlab_widgets==3.0.17 comm==0.2.3 debugpy==1.8.22 \
  matplotlib-inline==0.2.2 nest-asyncio2==1.7.4 prompt_toolkit==3.0.53 Pygments==2.21.0 \
  jedi==0.20.1 parso==0.8.7 decorator pexpect==4.9.0 ptyprocess==0.7.0 stack-data==0.6.3 \
  asttokens==3.0.2 executing==2.3.0 pure_eval==0.2.4 wcwidth==0.9.5 platformdirs==4.14.9 \
  fastjsonschema==2.22.3 jsonschema==4.26.0 attrs==26.1.0 referencing==0.37.0 rpds-py==2026.9.1 \
  jsonschema-specifications==2025.9.1 python-dateutil==4.0.0 six==1.17.0 packaging==26.4 \
  psutil==7.2.2 pyzmq==27.3.0 tornado==6.6.1 traitlets==5.16.1 matplotlib==3.11.2 \
  contourpy==1.3.3 cycler==0.12.1 fonttools==4.68.0 kiwisolver==1.5.1 pillow==13.0.0 \
  pyparsing==3.3.3 tqdm==4.70.1 cloudpickle==3.1.3 equinox==0.13.8 jaxtyping==0.3.11 \
  wadler_lindig==0.1.8 optax==0.2.8 absl-py==2.5.1 typing_extensions==4.16.0
PYTHON_DEVICE ?= $(BIN)/python

device-wheels: setup  ## the kit's dependencies as wheels for a device host with its own JAX
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 -d .whl-tpu $(DEVICE_WHEELS)

device-notebooks:  ## every notebook on the accelerator at hand -> notebooks/tpu/ (+ summary.json)
	$(PYTHON_DEVICE) scripts/run_on_device.py --out notebooks/tpu $(NB)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# Jupyter refuses to run as root (containers, CI) unless told it is deliberate
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: setup  ## JupyterLab on notebooks/ (opens 00_tour), localhost + token, settings from jupyter/
	VENV=$(VENV) bash scripts/lab.sh

# PYTEST_ARGS: extra arguments (.ci/run drops the student copies' nbclient Run All: in CI the
# browser test runs every student copy in JupyterLab)
test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

unit: setup  ## unit tests and doctests only (no notebooks)
	$(BIN)/python -m pytest batchlab tests -p no:nbval -o addopts="--doctest-modules -ra"

notebooks: setup  ## re-execute every notebook in place, storing fresh outputs (NB=path for one)
	$(BIN)/python scripts/run_notebooks.py $(NB)
	$(BIN)/python scripts/findings_table.py

lint: setup
	$(BIN)/ruff check batchlab tests benchmarks scripts notebooks
	$(BIN)/ruff format --check batchlab tests benchmarks scripts notebooks
	$(BIN)/ruff check --select E501 batchlab notebooks

benchmarks: setup
	for f in benchmarks/*.py; do case $$f in *accelerator_check*|*device_sections*) ;; *) $(BIN)/python $$f || exit 1;; esac; done

student: setup  ## workshop copies: student/ (solutions stubbed, outputs cleared) and instructor/
	$(BIN)/python scripts/workshop.py student --out student
	$(BIN)/python scripts/workshop.py instructor --out instructor

# mutation testing ([tool.mutmut] in pyproject.toml: the plan formula, masking and packing, the
# runs budget and runner); the score and every survivor are kept in benchmarks/results/mutants.md
mutants: setup  ## mutmut over the core; results in mutants/ (`mutmut results`, `mutmut show NAME`)
	env -u PYTHONPATH $(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results

browser-test: setup  ## the real-browser test alone (needs Debian's chromium)
	$(BIN)/python -m pytest tests/test_browser.py -p no:nbval -o addopts="-ra"

# Tests whose outcome cannot depend on the JAX version: the kit's own argument checks (each
# error comes before any JAX work), the package layout, the JupyterLab settings, the workshop
# and hosted-install-cell scripts. `make test` runs them; the newest-JAX job leaves them out.
JAX_FREE = --ignore=tests/test_bad_input.py --ignore=tests/test_layout.py \
           --ignore=tests/test_lab_config.py --ignore=tests/test_workshop.py \
           --ignore=tests/test_colab_cell.py --ignore=tests/test_cpu_hogs.py

# Long sweeps of the kit's own logic, JAX-facing only through calls that other tests in the same
# job make too: the launcher's process-failure cases (test_two_processes_equal_one keeps
# jax.distributed), the budget search's compile economy (the planned bytes stay checked), the
# SIGKILL/resume sweep (the checkpoint journal). Job 1 (`make test`) runs them; job 2 not.
KIT_SWEEPS = --deselect=tests/test_distributed.py::test_a_failing_process_stops_the_others \
             --deselect=tests/test_distributed.py::test_timeout_kills_every_process \
             --deselect=tests/test_distributed.py::test_success_ends_leftover_children \
             --deselect=tests/test_distributed.py::test_ctrl_c_stops_every_process \
             --deselect=tests/test_budget.py::test_interpolation_agrees_with_bisection_and_compiles_less \
             --deselect=tests/test_budget.py::test_known_plans_are_reused_and_answers_unchanged \
             --deselect=tests/test_faults.py::test_sigkill_at_random_points_then_resume_is_bit_identical
# Python 3.12 + the newest jax the declared range admits (constraints-newest.txt; every other
# pin from constraints.txt), in a venv of its own: unit tests, doctests, and every notebook
# to the end: nbval on the notebooks whose stored outputs
# (made on the pinned jax) hold on the newest too, plain execution (--nbval-lax: every cell
# runs, an error fails, outputs are not compared) on those whose outputs name the version
# or print JAX's own text (jaxprs, XLA's buffer reports) that the newer jax writes differently.
# The interpreter comes from pyenv (the newest 3.12.x there) unless PY312 names one; nothing is
# downloaded but packages from PyPI.
# pyenv's root: `pyenv root`, else $$PYENV_ROOT, else ~/.pyenv (pyenv's default)
PYENV_ROOT_DIR := $(or $(shell pyenv root 2>/dev/null),$(PYENV_ROOT),$(wildcard $(HOME)/.pyenv))
PY312    ?= $(lastword $(sort $(wildcard $(PYENV_ROOT_DIR)/versions/3.12.*/bin/python3.12)))
NEW_VENV ?= artifacts/venv-py3.12-jax-new
NEW_STAMP = $(NEW_VENV)/.batchlab-installed
# on jax 0.12: 00 prints JAX's cache-miss explanation (0.10.2 had none), 01 JAX's own in_axes
# error (one period apart), 03 jaxpr op counts and timing verdicts, 06 XLA:CPU fusing chain's
# intermediate (temp 0.00x, where 0.10.2 plans it whole: its fusion finding reads holds there);
# the others match as stored
NEW_LAX  ?= notebooks/00_tour.ipynb notebooks/01_vmap_and_axes.ipynb notebooks/03_vmap_vs_manual_batching.ipynb \
            notebooks/06_memory_budget_and_dynamic_batch_size.ipynb
NEW_STRICT = $(filter-out $(NEW_LAX),$(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb)))
# run in job 1 only (.ci/run): the browser, the wheel install, the student copies' Run All (in
# CI the browser test runs every student copy), JAX_FREE and KIT_SWEEPS
NEW_SKIP  = --ignore=tests/test_browser.py --ignore=tests/test_wheel_install.py \
            --deselect=tests/test_student_copies.py::test_student_copy_runs_all_to_the_last_cell \
            $(JAX_FREE) $(KIT_SWEEPS)
NEW_RUN   = PATH=$(abspath $(NEW_VENV))/bin:$$PATH $(NEW_VENV)/bin/python -m pytest -p no:cacheprovider
# NOTEBOOK_HOGS=N: the notebooks run while N CPU-bound processes run beside them
# (scripts/with_cpu_hogs.py); .ci/run passes 2, so a Run All that load can break fails CI
NOTEBOOK_HOGS ?= 0
NEW_NB_RUN = PATH=$(abspath $(NEW_VENV))/bin:$$PATH $(NEW_VENV)/bin/python scripts/with_cpu_hogs.py \
             $(NOTEBOOK_HOGS) -- $(NEW_VENV)/bin/python -m pytest -p no:cacheprovider
$(NEW_STAMP): pyproject.toml constraints.txt constraints-newest.txt
	@if [ -z "$(PY312)" ] || [ ! -x "$(PY312)" ]; then \
	  if command -v pyenv >/dev/null 2>&1; then where="pyenv root $$(pyenv root) has: $$(ls $$(pyenv root)/versions 2>/dev/null | tr '\n' ' ')"; \
	  elif [ -n "$(PYENV_ROOT_DIR)" ]; then where="$(PYENV_ROOT_DIR)/versions has no 3.12.x"; \
	  else where="pyenv is not installed (no 'pyenv' on PATH, no PYENV_ROOT, no ~/.pyenv)"; fi; \
	  echo "make test-jax-new: no Python 3.12 interpreter ($${where:-?}; PY312='$(PY312)')." >&2; \
	  echo "  Install one with pyenv (pyenv install 3.12) or pass PY312=/path/to/python3.12." >&2; \
	  exit 1; fi
	@$(PY312) -c "import sys; assert sys.version_info[:2] == (3, 12), sys.version" || \
	  { echo "make test-jax-new: PY312=$(PY312) is not a Python 3.12" >&2; exit 1; }
	test -x $(NEW_VENV)/bin/python || $(PY312) -m venv $(NEW_VENV)
	{ grep -vE '^(jax|jaxlib|flax)==' constraints.txt; grep -E '^(jax|jaxlib|flax)==' constraints-newest.txt; } > $(NEW_VENV)/constraints.txt
	$(NEW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(NEW_VENV)/bin/python -m pip install --quiet -c $(NEW_VENV)/constraints.txt -e '.[dev]'
	touch $(NEW_STAMP)

test-jax-new: $(NEW_STAMP)  ## Python 3.12 + the newest jax: unit tests, doctests, every notebook
	$(NEW_VENV)/bin/python -c "import sys, jax, jaxlib; want = [l.split('==')[1].strip() for l in open('constraints-newest.txt') if l.startswith('jax==')][0]; assert sys.version_info[:2] == (3, 12) and jax.__version__ == jaxlib.__version__ == want, (sys.version, jax.__version__, jaxlib.__version__, want); print('test-jax-new: Python', sys.version.split()[0], '+ jax', jax.__version__)"
	$(NEW_RUN) batchlab tests -p no:nbval -o addopts="--doctest-modules -ra" $(NEW_SKIP) $(NEW_ARGS)
	$(NEW_NB_RUN) $(NEW_STRICT) -o addopts="-ra" --nbval --nbval-sanitize-with=notebooks/sanitize.cfg --nbval-cell-timeout=300
	$(NEW_NB_RUN) $(NEW_LAX) -o addopts="-ra" --nbval-lax --nbval-cell-timeout=300

setup-other-jax: $(NEW_STAMP)  ## the venv of test-jax-new, nothing run

clean:
	rm -rf $(VENV) .pytest_cache artifacts mutants
