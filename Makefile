# lakectl: `make demo` runs the main job on a local warehouse; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
ORACLE_VENV := .venv-oracle
BIN := $(VENV)/bin
PYPAIMON_VERSION := 2.1.0
export LAKECTL_ORACLE_PYTHON := $(CURDIR)/$(ORACLE_VENV)/bin/python

.PHONY: all venv oracle demo test test-quick bench clean

all: venv

$(BIN)/lakectl: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/lakectl

# The official reader, pypaimon, pins old pyarrow/pandas/fsspec: it lives in its own
# virtualenv and the tests call it as a subprocess. It is never a runtime dependency.
$(ORACLE_VENV)/bin/python:
	$(PYTHON) -m venv $(ORACLE_VENV)
	$(ORACLE_VENV)/bin/pip install --quiet --upgrade pip
	$(ORACLE_VENV)/bin/pip install --quiet 'pypaimon==$(PYPAIMON_VERSION)'

oracle: $(ORACLE_VENV)/bin/python

demo: venv
	bash scripts/demo.sh

test: venv oracle
	$(BIN)/python -m pytest -q

test-quick: venv
	$(BIN)/python -m pytest -q -m "not slow and not interop and not spark and not cluster and not s3"

# Benchmarks are not tests: they measure, and report ratios against a floor from the same run.
BENCH_ROWS ?= 5000000
bench: venv
	$(BIN)/python bench/spark_write.py --rows $(BENCH_ROWS) --repeat 3 --out bench/results-spark.md
	$(BIN)/python bench/expire.py --snapshots 5000 --out bench/results-expire.md

clean:
	rm -rf $(VENV) $(ORACLE_VENV) warehouse .pytest_cache .hypothesis
