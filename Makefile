# Every target bootstraps its own virtualenv: a fresh machine needs only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench faults clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/intentbus demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml

typecheck: $(STAMP)
	$(BIN)/mypy shared infra functions tests

unit: $(STAMP)
	$(BIN)/pytest tests/unit

test: lint typecheck
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python -m tests.bench.run

# Seeded fault schedules with the invariant checker; FAULTS=N for a longer run, FAULTS_SEED=S to replay.
faults: $(STAMP)
	$(BIN)/python -m tests.faults.run

clean:
	rm -rf $(VENV) .bench .local build *.egg-info
