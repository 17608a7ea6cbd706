# Set-up promises (CONTRACTS §9): each target works on a fresh clone as the only command.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test check lint typecheck bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "gpuwise needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: install
	$(BIN)/gpuwise plan examples/llama3-8b-lora.toml --top 8

test: install
	$(BIN)/python -m pytest -q

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
