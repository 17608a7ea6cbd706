# Set-up promises: each target works on a fresh clone as the only command.
# EXTRAS: the optional dependency groups installed. hf-test (a CPU torch and transformers, about 1 GB) is in
# the default so that a plain clone runs every test, the real Hugging Face Trainer one included; without it
# (`make test EXTRAS=dev`) that one test skips. bench (torch) lets the CPU bench suite's tests run.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
EXTRAS ?= dev,hf-test,bench

.PHONY: install demo test fuzz check lint typecheck bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpuwise needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@touch $(STAMP)

demo: install
	$(BIN)/gpuwise plan examples/llama3-8b-lora.toml --top 8

test: install
	$(BIN)/python -m pytest -q

# Generated inputs for every format gpuwise reads (tests/fuzz): 10,000 per format in process, 50 of them
# through the real command; each bounded to 10 s and 1 GiB. One format: make fuzz FORMAT=workload.
FORMAT   ?=
EXAMPLES ?= 10000
fuzz: install
	GPUWISE_FUZZ=1 GPUWISE_FUZZ_FORMATS=$(FORMAT) GPUWISE_FUZZ_EXAMPLES=$(EXAMPLES) \
	  $(BIN)/python -m pytest -q -p no:cacheprovider -m fuzz tests/fuzz

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: install
	$(BIN)/mypy

check: lint typecheck test

bench: install
	$(BIN)/python benchmarks/catalog_speed.py
	$(BIN)/python benchmarks/estimate_accuracy.py
	$(BIN)/python benchmarks/plan_speed.py
	$(BIN)/python benchmarks/monitor_overhead.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
