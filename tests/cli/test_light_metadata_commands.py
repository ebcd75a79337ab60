"""Metadata commands load no data libraries: no pyspark, no pyarrow.compute, no pandas, no
sqlglot. (Their speed is measured by `make bench`, never asserted here.)"""

import json
import subprocess
import sys

import pyarrow as pa

from core.ops.create import create
from core.table import Table

PROBE = r"""
import json, sys
from typer.testing import CliRunner
from lakectl.app import app
codes = []
for args in (["snapshots", "db.t"], ["describe", "db.t"], ["expire", "db.t", "--dry-run"], ["files", "db.t"],
             ["schemas", "db.t"], ["tag", "list", "db.t"], ["check", "db.t"], ["list", "db"],
             ["consumer", "list", "db.t"], ["partitions", "db.t"], ["buckets", "db.t"], ["manifests", "db.t"],
             ["expire-tags", "db.t", "--older-than", "0s", "--dry-run"], ["tag", "rename", "db.t", "t1", "t2"],
             ["truncate", "db.t", "--dry-run"], ["drop", "db.t", "--dry-run"], ["rename", "db.t", "db.u", "--dry-run"],
             ["drop-database", "db", "--cascade", "--dry-run"],
             ["branch", "create", "db.t", "b"], ["branch", "list", "db.t"],
             ["snapshots", "db.t", "--branch", "b"], ["describe", "db.t", "--branch", "b"],
             ["files", "db.t", "--branch", "b"], ["manifests", "db.t", "--branch", "b"],
             ["expire", "db.t", "--dry-run", "--branch", "b"], ["consumer", "list", "db.t", "--branch", "b"],
             ["rollback", "db.t", "--snapshot-id", "1", "--dry-run", "--branch", "b"],
             ["check", "db.t"], ["check", "db.t", "--repair", "--dry-run"], ["branch", "delete", "db.t", "b"]):
    codes.append(CliRunner().invoke(app, ["-w", sys.argv[1], "-f", "json", *args]).exit_code)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j", "pandas", "sqlglot")
               or m == "pyarrow.compute")
print(json.dumps([codes, heavy]))
"""


def test_metadata_commands_import_no_data_libraries(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", primary_keys=["id"])
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.tags.create("t1", t.latest_snapshot())
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True,
                         timeout=120, check=True)
    codes, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert codes == [0] * 30
    assert heavy == []


LISTING_PROBE = r"""
import json, sys
from typer.testing import CliRunner
from lakectl.app import app
code = CliRunner().invoke(app, ["-w", sys.argv[1], "-f", "json", *sys.argv[2:]]).exit_code
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "pyarrow", "fastavro"})
print(json.dumps([code, loaded]))
"""

# Commands that read only JSON metadata files (snapshots, schemas, tags, branches,
# consumers, the warehouse's listing): they load no column or Avro library.
LISTINGS = (["snapshots", "db.t"], ["schemas", "db.t"], ["tag", "list", "db.t"], ["branch", "list", "db.t"],
            ["consumer", "list", "db.t"], ["list", "db"])


def test_listing_commands_load_no_column_or_avro_library(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", primary_keys=["id"])
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.tags.create("t1", t.latest_snapshot())
    found = {}
    for args in LISTINGS:
        out = subprocess.run([sys.executable, "-c", LISTING_PROBE, str(tmp_path), *args], capture_output=True,
                             text=True, timeout=120, check=True)
        found[" ".join(args)] = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {" ".join(args): [0, []] for args in LISTINGS}


# Commands that read manifests too (Avro), but no data file: fastavro is all they load.
MANIFEST_READERS = (["files", "db.t"], ["describe", "db.t"], ["check", "db.t"], ["partitions", "db.t"],
                    ["buckets", "db.t"], ["manifests", "db.t"], ["expire", "db.t", "--dry-run"],
                    ["rollback", "db.t", "--snapshot-id", "1", "--dry-run"], ["tag", "create", "db.t", "t2"])


def test_manifest_reading_commands_load_no_column_library(tmp_path):
    t = Table.locate("db.t", warehouse=str(tmp_path))
    create(t, "id BIGINT, v STRING", primary_keys=["id"], options={"deletion-vectors.enabled": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"id": [2, 3], "v": ["c", "d"]}))  # a deletion vector for the first file
    found = {}
    for args in MANIFEST_READERS:
        out = subprocess.run([sys.executable, "-c", LISTING_PROBE, str(tmp_path), *args], capture_output=True,
                             text=True, timeout=120, check=True)
        code, loaded = json.loads(out.stdout.strip().splitlines()[-1])
        found[" ".join(args)] = [code, [m for m in loaded if m != "fastavro"]]
    assert found == {" ".join(args): [0, []] for args in MANIFEST_READERS}
