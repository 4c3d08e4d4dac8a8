# Every target bootstraps its own virtualenv: a fresh machine needs only Python 3.11 and pip.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# checkov pins boto3, networkx and packaging below what this project installs: it gets a virtualenv of
# its own. Pinned, since a new checkov brings new checks; the stamp names the version it installed.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)

.PHONY: demo test lint typecheck unit bench faults clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(CHECKOV_STAMP):
	rm -rf $(CHECKOV_VENV)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	touch $(CHECKOV_STAMP)

demo: $(STAMP)
	$(BIN)/intentbus demo

# checkov fails on any failed check and prints its counts; each skip names its reason in the resource.
lint: $(STAMP) $(CHECKOV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml
	$(CHECKOV_VENV)/bin/checkov --file template.yaml --framework cloudformation --skip-download --compact --quiet

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
	rm -rf $(VENV) $(CHECKOV_VENV) .bench .local build *.egg-info
