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
# The SAM CLI gets a virtualenv of its own: it pins boto3 and pydantic exactly.
SAM_VENV := .venv-sam
SAM := $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed
SAM_CLI := aws-sam-cli==1.170.0
# The functions' and the layer's architecture (the template's Architecture parameter): arm64 or x86_64.
ARCHITECTURE ?= arm64
export SAM_CLI_TELEMETRY := 0

.PHONY: demo test lint typecheck unit build bench faults clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

$(CHECKOV_STAMP):
	rm -rf $(CHECKOV_VENV)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	touch $(CHECKOV_STAMP)

$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet '$(SAM_CLI)'
	touch $(SAM_STAMP)

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

# The suite on every core (TEST_WORKERS, default auto), then the packaging tests (sam build, hence the SAM
# CLI; the wheel and the project it makes), each run's time printed; fails if either failed.
# worksteal: each worker starts on one contiguous half (a module's fixtures built once) and an idle worker
# takes tests from the other's end. The 15 slowest tests are listed, so a run shows where its time goes.
TEST_WORKERS ?= auto
test: lint typecheck $(SAM_STAMP)
	@started=$$(date +%s); \
	$(BIN)/pytest -m "not packaging" -n $(TEST_WORKERS) --dist worksteal --durations=15; suite=$$?; \
	middle=$$(date +%s); \
	$(BIN)/pytest -m packaging; packaging=$$?; \
	ended=$$(date +%s); \
	echo "make test: $$((middle - started)) s for the suite without the packaging tests (exit $$suite)," \
		"$$((ended - middle)) s for the packaging tests (exit $$packaging)"; \
	test $$suite -eq 0 && test $$packaging -eq 0

# sam validate --lint, sam build into .aws-sam/build (the layer by shared/Makefile, for ARCHITECTURE), then
# the build check: architectures of compiled code, the runtime's SDK kept out, Lambda's size limits.
build: $(STAMP) $(SAM_STAMP)
	@case "$(ARCHITECTURE)" in arm64|x86_64) ;; *) echo "ARCHITECTURE must be arm64 or x86_64, not '$(ARCHITECTURE)'"; exit 2;; esac
	$(SAM) validate --lint
	ARCHITECTURE=$(ARCHITECTURE) $(SAM) build --parameter-overrides Architecture=$(ARCHITECTURE)
	$(BIN)/python -m intentbus_build.check .aws-sam/build --parameter Architecture=$(ARCHITECTURE)

# LOAD=N instead: N inputs through the local cloud, queue depth and latency per stage drawn in .bench/load-N.png.
bench: $(STAMP)
ifdef LOAD
	$(BIN)/python -m tests.bench.load $(LOAD)
else
	$(BIN)/python -m tests.bench.run
endif

# Seeded fault schedules with the invariant checker; FAULTS=N for a longer run, FAULTS_SEED=S to replay.
faults: $(STAMP)
	$(BIN)/intentbus faults --workflows intentbus.workflows.incident,intentbus.workflows.direct_tool,intentbus_faults.fanout_workflow

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(SAM_VENV) .aws-sam .bench .local build *.egg-info
