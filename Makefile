# tensorgate: `make serve` and `make test` do everything on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8500
REST_PORT ?= 8501

.PHONY: venv serve test lint format protos demo-model clean system-deps bench-venvs

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,tensorflow,bench]'
	touch $(STAMP)

venv: $(STAMP)

# prometheus, kubectl and h2load, which tests and bench drive for real (apt-get, when missing).
system-deps:
	scripts/system_deps.sh

# The Triton and KServe peers' virtualenvs (bench/.venvs/), which the bench smoke tests start for
# real: built once (a few minutes, Triton's from Debian's python3.11, apt-installed if missing),
# then reused. One that cannot be built here does not stop the build: its test skips, saying why.
bench-venvs: $(STAMP)
	-$(BIN)/python -m bench venvs triton kserve

serve: $(STAMP)
	$(BIN)/tensorgate --port=$(PORT) --rest_api_port=$(REST_PORT) --model_name=digits --model_base_path=$(CURDIR)/models/digits

test: $(STAMP) system-deps bench-venvs
	$(BIN)/ruff check gateway workers tests bench scripts
	$(BIN)/ruff format --check gateway workers tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check gateway workers tests bench scripts
	$(BIN)/ruff format --check gateway workers tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

format: $(STAMP)
	$(BIN)/ruff format gateway workers tests bench scripts
	$(BIN)/ruff check --fix gateway workers tests bench scripts

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

demo-model: $(STAMP)
	$(BIN)/python scripts/make_demo_model.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache

.PHONY: bench bench-quick
bench-quick: $(STAMP) system-deps
	$(BIN)/python -m bench run --quick

bench: $(STAMP) system-deps
	$(BIN)/python -m bench run

# Property tests only (hypothesis's own `hypothesis` marker), randomized and 10× longer than in
# `make test`, which runs them derandomized (profiles: tests/conftest.py).
.PHONY: test-long
test-long: $(STAMP)
	HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest -q -m hypothesis
