# Two entry points: `make run` starts the product, `make test` runs every check.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# torch is pinned here, not in pyproject: that exact version has a CPU build on this machine.
TORCH := torch==2.13.0
# Python keeps its compiled modules (__pycache__) even where the shell says not to
# (PYTHONDONTWRITEBYTECODE): otherwise every process, the app's workers and the tests' servers
# and training jobs alike, compiles Django, pandas and torch again (torch's import: 4.2 s
# instead of 2.1 s; Django's set-up: 5.0 s instead of 1.6 s).
unexport PYTHONDONTWRITEBYTECODE
FRONTEND_SOURCES := $(shell find frontend/src frontend/index.html frontend/vite.config.* frontend/tsconfig*.json -type f 2>/dev/null)

.PHONY: run test test-fast install install-dev frontend check-schema check-compose lint typecheck pytest pytest-fast frontend-test system-deps clean

run: install frontend
	$(BIN)/profiler-app up

# The checks run two at a time (each is one process on one core), after the schema check,
# which rewrites files the frontend's checks read; then the tests.
test: install-dev frontend system-deps check-schema
	$(MAKE) --no-print-directory -j2 --output-sync=target check-compose lint typecheck frontend-test
	$(MAKE) --no-print-directory pytest

# The inner loop: lint, types, the frontend's unit tests and the tests that need no database,
# broker or browser, two at a time (each runs on one core). `make test` still runs everything.
test-fast: install-dev frontend/node_modules/.package-lock.json
	$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck frontend-test pytest-fast

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs what pip would (the same versions), in seconds where pip took two minutes, from
# the sources pip is configured with here (pip.conf and PIP_* variables: indexes, wheel
# folders, constraints), passed on as uv's options.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install --quiet uv
PIP_SOURCES = $(shell $(BIN)/pip config list 2>/dev/null | awk -F= \
  '$$1 ~ /[.](index-url|extra-index-url|find-links|constraint)$$/ { \
     key = substr($$1, index($$1, ".") + 1); value = substr($$0, length($$1) + 2); \
     gsub(/'\''/, "", value); n = split(value, each, " "); \
     for (i = 1; i <= n; i++) printf "--%s %s ", key, each[i] }')
UV_INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python --native-tls \
  --index-strategy unsafe-best-match $(PIP_SOURCES)

# The stamps live in the virtual environment: a new one is installed again, whatever the
# stamps of an old one said.
$(VENV)/.stamp-install: pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e '.[server,collector,embedded]' $(TORCH)
	touch $@

# The trainer callbacks' tests train with Lightning and Transformers (their torch stays ours);
# the XPlane tests profile a JAX loop and a TensorFlow loop on CPU.
$(VENV)/.stamp-install-dev: $(VENV)/.stamp-install pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e '.[server,collector,embedded,dev,lightning,huggingface,jax,tensorflow]' $(TORCH)
	touch $@

install: $(VENV)/.stamp-install
install-dev: $(VENV)/.stamp-install-dev

frontend/node_modules/.package-lock.json: frontend/package.json frontend/package-lock.json
	npm --prefix frontend ci --no-audit --no-fund
	touch $@

# The OpenID Connect provider the sign-in tests start on loopback (tests/oidc/provider.mjs).
tests/oidc/node_modules/.package-lock.json: tests/oidc/package.json tests/oidc/package-lock.json
	npm --prefix tests/oidc ci --no-audit --no-fund
	touch $@

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(FRONTEND_SOURCES)
	npm --prefix frontend run build

frontend: frontend/dist/index.html

# Browser tests drive Debian's Chromium (nothing downloads a browser of its own); the compose
# file is validated with Debian's docker-compose, since no Docker engine runs on a test machine.
system-deps:
	@command -v chromium >/dev/null && command -v docker-compose >/dev/null || { \
	  apt-get update -qq && apt-get install -y -qq chromium docker-compose; }

check-compose: system-deps
	POSTGRES_PASSWORD=check SECRET_KEY=check docker-compose -f docker/compose.yml config --quiet

# The frontend's API client is generated from the server's OpenAPI schema; they must agree.
check-schema: install-dev frontend/node_modules/.package-lock.json
	@# The schema comes from the code alone: no database or broker is started for it.
	DATABASE_URL=postgres://schema@localhost/none REDIS_URL=redis://localhost/0 \
	  $(BIN)/python manage.py spectacular --format openapi-json --file frontend/openapi.json
	npm --prefix frontend run gen:api
	@git diff --quiet -- frontend/openapi.json frontend/src/api/schema.d.ts || \
	  { echo "The API schema changed: commit frontend/openapi.json and frontend/src/api/schema.d.ts"; \
	    git --no-pager diff --stat -- frontend/openapi.json frontend/src/api/schema.d.ts; exit 1; }

lint: frontend/node_modules/.package-lock.json
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	npm --prefix frontend run format:check

typecheck:
	@# The type checker imports settings but connects to nothing.
	DATABASE_URL=postgres://typecheck@localhost/none REDIS_URL=redis://localhost/0 $(BIN)/mypy profiler_app collector tracefmt

frontend-test: frontend/node_modules/.package-lock.json
	npm --prefix frontend run lint
	npm --prefix frontend run typecheck
	npm --prefix frontend run test

# Three processes (pytest-xdist), each with its own test database, queues, Celery worker and
# browser: most tests wait on PostgreSQL, the worker or the browser, and the others fill those
# waits (on two cores: 14.5 min where two processes took 19). A file runs whole in one process
# (its module-level caches are built once).
# The 30 slowest tests close the log: where the suite's time goes.
PYTEST_WORKERS ?= 3
pytest: tests/oidc/node_modules/.package-lock.json
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=30

# Unreachable servers: a test that needs one and was not marked `services` fails, not skips.
pytest-fast:
	DATABASE_URL=postgres://fast@127.0.0.1:1/none REDIS_URL=redis://127.0.0.1:1/0 \
	  $(BIN)/python -m pytest -q -m "not services and not slow"

clean:
	rm -rf $(VENV) .stamp-install .stamp-install-dev frontend/node_modules frontend/dist tests/oidc/node_modules
