# batchlab: two commands on a fresh machine with Python 3.11 and make.
#   make lab    set up .venv and open the notebooks in JupyterLab
#   make test   set up .venv and run every test (unit, doctests, nbval)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.batchlab-installed
export PATH := $(abspath $(BIN)):$(PATH)
export TQDM_DISABLE ?= 1

.PHONY: setup lab test unit notebooks student lint benchmarks browser-test clean
.PHONY: unit-jax-low

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

test: setup
	$(BIN)/python -m pytest

unit: setup  ## unit tests and doctests only (no notebooks)
	$(BIN)/python -m pytest batchlab tests -p no:nbval -o addopts="--doctest-modules -ra"

notebooks: setup  ## re-execute every notebook in place, storing fresh outputs (NB=path for one)
	$(BIN)/python scripts/run_notebooks.py $(NB)

lint: setup
	$(BIN)/ruff check batchlab tests benchmarks scripts notebooks
	$(BIN)/ruff format --check batchlab tests benchmarks scripts

benchmarks: setup
	for f in benchmarks/*.py; do case $$f in *gpu_check*) ;; *) $(BIN)/python $$f || exit 1;; esac; done

student: setup  ## workshop copies: student/ (solutions stubbed, outputs cleared) and instructor/
	$(BIN)/python scripts/workshop.py student --out student
	$(BIN)/python scripts/workshop.py instructor --out instructor

browser-test: setup  ## the real-browser test alone (needs Debian's chromium)
	$(BIN)/python -m pytest tests/test_browser.py -p no:nbval -o addopts="-ra"

# The lowest jax/jaxlib that pyproject.toml declares, in a venv of its own: unit tests and
# doctests (notebooks and the browser are pinned to constraints.txt and not run here).
JAX_LOW  ?= 0.10.0
LOW_VENV ?= artifacts/venv-jax-$(JAX_LOW)
LOW_SKIP  = --ignore=tests/test_browser.py --ignore=tests/test_wheel_install.py --ignore=tests/test_student_copies.py
unit-jax-low:  ## unit tests + doctests on the lowest declared jax (JAX_LOW), in a second venv
	test -x $(LOW_VENV)/bin/python || $(PYTHON) -m venv $(LOW_VENV)
	sed -E 's/^(jax|jaxlib)==.*/\1==$(JAX_LOW)/' constraints.txt > $(LOW_VENV)/constraints.txt
	$(LOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOW_VENV)/bin/python -m pip install --quiet -c $(LOW_VENV)/constraints.txt -e '.[dev]'
	$(LOW_VENV)/bin/python -c "import jax, jaxlib; assert jax.__version__ == jaxlib.__version__ == '$(JAX_LOW)', (jax.__version__, jaxlib.__version__)"
	PATH=$(abspath $(LOW_VENV))/bin:$$PATH $(LOW_VENV)/bin/python -m pytest batchlab tests -p no:nbval -o addopts="--doctest-modules -ra -p no:cacheprovider" $(LOW_SKIP)

clean:
	rm -rf $(VENV) .pytest_cache artifacts
