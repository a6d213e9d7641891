# gpu-advisor: `make run` serves, `make test` runs the whole suite. Both set up what they need.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck ci bench validate openapi clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	PORT=$(PORT) $(BIN)/gpu-advisor serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -n auto --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check service tests bench migrations

typecheck: $(STAMP)
	$(BIN)/mypy

openapi: $(STAMP)
	$(BIN)/gpu-advisor export-openapi -o openapi/openapi.json

bench: $(STAMP)
	$(BIN)/python -m bench

validate: $(STAMP)
	$(BIN)/python -m tests.validation.report tests/validation/points.csv tests/validation/calibration.csv

ci:
	.ci/run

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache gpu_advisor.db
