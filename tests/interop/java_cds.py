"""Record the Java oracle's class-data archive (``make java-oracle``): pack the compiled oracle
into a jar (an archive's class path may hold jars only), then run one JVM through the work the
tests ask of Java (create, write, compact, tag, expire, branch, reads of several kinds) with
``-XX:ArchiveClassesAtExit``, so that later JVMs map those classes instead of loading them.

Usage: python tests/interop/java_cds.py ORACLE_VENV
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def pack(venv: Path) -> Path:
    jar = venv / "java-oracle.jar"
    tmp = jar.with_suffix(".jar.tmp")
    subprocess.run(["jar", "cf", str(tmp), "-C", str(venv / "java-oracle"), "."], check=True)
    os.replace(tmp, jar)
    return jar


def training_spec(table: Path) -> dict:
    fields = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"},
              {"name": "dt", "type": "STRING NOT NULL"}]
    rows = [[i, f"v{i}", f"d{i % 2}"] for i in range(20)]
    return {"table": str(table),
            "create": {"fields": fields, "partitionKeys": ["dt"], "primaryKeys": ["k", "dt"],
                       "options": {"bucket": "2", "file.format": "parquet"}},
            "steps": [{"op": "write", "rows": rows},
                      {"op": "write", "rows": rows[:5], "kinds": ["-D"] * 5},
                      {"op": "tag", "name": "t1", "snapshot": 1},
                      {"op": "compact", "full": True},
                      {"op": "set-option", "key": "snapshot.num-retained.min", "value": "1"},
                      {"op": "create-branch", "name": "b", "tag": "t1"},
                      {"op": "write", "rows": rows[5:8], "branch": "b"},
                      {"op": "expire", "retain_max": 2, "retain_min": 2, "older_than_ms": 0}]}


def main(venv: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ["LAKECTL_ORACLE_PYTHON"] = str(venv / "bin" / "python")
    pack(venv)
    archive = venv / "java-oracle.jsa"
    archive.unlink(missing_ok=True)
    import java_oracle  # noqa: E402 (after the environment that picks the venv)

    with tempfile.TemporaryDirectory(prefix="lakectl-java-cds-") as scratch:
        table = Path(scratch) / "wh" / "db.db" / "t"
        requests = Path(scratch) / "reads.jsonl"
        requests.write_text("".join(json.dumps(r) + "\n" for r in (
            [str(table), "--snapshot", "2"], [str(table), "--tag", "t1"], [str(table), "--branch", "b"],
            [str(table), "--filter-equal", "k", "7", "--with-kind"], [str(table), "--incremental-between", "2,3"])))
        spec = Path(scratch) / "spec.json"
        spec.write_text(json.dumps(training_spec(table)))
        # One JVM does it all: the archive holds the classes that JVM loaded.
        # Recorded aside and renamed when the run succeeded: make never takes a failed
        # run's archive for done.
        recording = archive.with_suffix(".jsa.tmp")
        os.environ["LAKECTL_JAVA_CDS_DUMP"] = str(recording)
        try:
            java_oracle._java(["train", str(spec), str(requests)])
        finally:
            del os.environ["LAKECTL_JAVA_CDS_DUMP"]
        os.replace(recording, archive)
    print(f"class-data archive: {archive} ({archive.stat().st_size // 2**20} MiB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
