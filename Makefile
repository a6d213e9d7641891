# gpu-advisor: `make run` serves, `make test` runs the whole suite. Both set up what they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed

UV ?= uv
# `make run` and `make test` may start together on a fresh clone: one venv install at a time.
FLOCK := $(shell command -v flock >/dev/null 2>&1 && echo flock $(VENV).install.lock)

.PHONY: run test test-fast lint typecheck ci bench validate openapi screenshots lock clean

# Every version comes from the committed lock (pinned by `make lock`), the build backend
# included; the project itself is installed editable, without dependencies and built with that
# locked setuptools (no build isolation), so the source tree is what runs.
$(STAMP): pyproject.toml requirements-dev.lock
	$(FLOCK) sh -c 'set -e; \
	  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  $(BIN)/python -m pip install -q --upgrade pip; \
	  $(BIN)/python -m pip install -q --no-deps -r requirements-dev.lock; \
	  $(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .; \
	  touch $(STAMP)'

run: $(STAMP)
	PORT=$(PORT) $(BIN)/gpu-advisor serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m service.engine.physics.precompile
	$(BIN)/python -m pytest -n auto --dist loadfile

# The suite without the slow tests (races, overload, live servers) and the browser tests: quick
# feedback while working; `make test` (or .ci/run) before a merge.
FAST_MARKERS := not slow and not browser
test-fast: $(STAMP)
	$(BIN)/python -m service.engine.physics.precompile
	$(BIN)/python -m pytest -n auto --dist loadfile -m "$(FAST_MARKERS)"

lint: $(STAMP)
	$(BIN)/ruff check service gpu_advisor_client examples tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

openapi: $(STAMP)
	$(BIN)/gpu-advisor export-openapi -o openapi/openapi.json

# HTTP load comes from wrk (installed here when missing and apt-get may); without it,
# bench/loadgen.py stands in. `BENCH_ONLY=seeded,http make bench` runs a part (bench/__main__.py).
bench: $(STAMP)
	@command -v wrk >/dev/null 2>&1 || (apt-get update && apt-get install -y wrk) \
	  || echo "note: wrk not installed; the HTTP benchmark falls back to bench/loadgen.py"
	$(BIN)/python -m bench

# The docs and the comparison page for two examples, in headless Chromium (Debian `chromium`
# and `chromium-driver`), written to docs/screenshots/.
screenshots: $(STAMP)
	$(BIN)/python -m tests.browser.screenshots docs/screenshots

validate: $(STAMP)
	$(BIN)/python -m tests.validation.report tests/validation/points.csv tests/validation/calibration.csv

ci:
	.ci/run

# Re-pin both lock files from pyproject.toml (needs uv: `pip install uv`); keeps current pins
# unless pyproject.toml asks otherwise; `make lock UPGRADE=--upgrade` takes the newest.
# Both locks also pin the build backend (pyproject.toml's [build-system] requires, read from
# stdin): the venv and the image build the project with the locked setuptools.
LOCK_ARGS := --universal --python-version 3.11 --custom-compile-command 'make lock' $(UPGRADE)
BUILD_REQUIRES = $(PYTHON) -c 'import tomllib; \
  print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")'
lock:
	$(BUILD_REQUIRES) | $(UV) pip compile pyproject.toml - $(LOCK_ARGS) -o requirements.lock
	$(BUILD_REQUIRES) | $(UV) pip compile pyproject.toml - --extra dev --extra validators \
	  --override lock-overrides.txt $(LOCK_ARGS) -o requirements-dev.lock

clean:
	rm -rf $(VENV) $(VENV).install.lock .pytest_cache .mypy_cache .ruff_cache gpu_advisor.db*
