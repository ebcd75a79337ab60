"""Test-side access to the official reader/writer (pypaimon) in its own virtualenv.

pypaimon pins an old pyarrow/pandas/fsspec, so it never shares lakectl's
environment: the scripts in ``tests/oracle/`` run under the oracle venv's python
as subprocesses, and data crosses the boundary as Arrow IPC files (compatible
both ways between pyarrow 19 and lakectl's pyarrow).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.venvs import venv_python

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_DIR = REPO_ROOT / "tests" / "oracle"
_TIMEOUT_SECONDS = 300


def oracle_python() -> str:
    """pypaimon 2.1's python (``LAKECTL_ORACLE_PYTHON`` or ``.venv-oracle``, from ``make oracle``)."""
    return venv_python("LAKECTL_ORACLE_PYTHON", ".venv-oracle", "oracle", "pypaimon oracle")


def _run(script: str, args: list[str]) -> dict[str, Any]:
    cmd = [oracle_python(), str(ORACLE_DIR / script), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)
    assert result.returncode == 0, (
        f"oracle {script} failed (exit {result.returncode}): {' '.join(cmd)}\n"
        f"--- stderr ---\n{result.stderr}\n--- stdout ---\n{result.stdout}"
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"oracle {script} printed nothing\n--- stderr ---\n{result.stderr}"
    meta: dict[str, Any] = json.loads(lines[-1])
    return meta


def official_read(
    table_path: str | os.PathLike[str],
    tmp_path: Path,
    snapshot: int | None = None,
    tag: str | None = None,
    projection: list[str] | None = None,
    branch: str | None = None,
) -> tuple[pa.Table, dict[str, Any]]:
    """Read a table with pypaimon.

    Args:
        table_path: the table directory (``<warehouse>/<db>.db/<name>``).
        tmp_path: scratch directory for the exchanged IPC file.
        snapshot: time-travel to this snapshot id.
        tag: time-travel to this tag (exclusive with ``snapshot``).
        projection: read only these columns, in this order.
        branch: read this branch (pypaimon opens ``db.t$branch_NAME`` in a filesystem catalog).

    Returns:
        The rows (in pypaimon's order, unsorted) and the script's JSON line:
        ``rows``, ``columns``, ``latest_snapshot``, ``snapshot``, ``schema``.
    """
    if snapshot is not None and tag is not None:
        raise ValueError("give snapshot or tag, not both")
    out = Path(tmp_path) / f"oracle-read-{len(list(Path(tmp_path).glob('oracle-read-*')))}.arrow"
    args = [str(table_path), str(out)]
    if snapshot is not None:
        args += ["--snapshot", str(snapshot)]
    if tag is not None:
        args += ["--tag", tag]
    if projection is not None:
        args += ["--projection", ",".join(projection)]
    if branch is not None:
        args += ["--branch", branch]
    meta = _run("paimon_read.py", args)
    with pa.OSFile(str(out), "rb") as source:
        table = pa.ipc.open_file(source).read_all()
    return table, meta


def official_write(job: dict[str, Any], batches: list[pa.Table], tmp_path: Path) -> dict[str, Any]:
    """Create and write a table with pypaimon (see ``tests/oracle/paimon_write.py``).

    Args:
        job: the job description; each ``write`` step's ``data`` is filled in here.
        batches: one table per ``write`` or ``update_by_row_id`` step, in step order.
        tmp_path: scratch directory for the job and IPC files.

    Returns:
        The script's JSON line: ``latest_snapshot``, ``table_path``, ``steps``.
    """
    job = json.loads(json.dumps(job))  # the caller's dict stays untouched
    write_steps = [step for step in job.get("steps", []) if step["op"] in ("write", "update_by_row_id")]
    assert len(write_steps) == len(batches), (
        f"job has {len(write_steps)} write steps but {len(batches)} batches were given"
    )
    workdir = Path(tmp_path) / f"oracle-write-{len(list(Path(tmp_path).glob('oracle-write-*')))}"
    workdir.mkdir(parents=True)
    for i, (step, batch) in enumerate(zip(write_steps, batches)):
        path = workdir / f"batch-{i}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_table(batch)
        step["data"] = str(path)
    job_path = workdir / "job.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    return _run("paimon_write.py", [str(job_path)])


def official_stream(table_path: str | os.PathLike[str], tmp_path: Path, plans: int,
                    consumer_id: str | None = None) -> tuple[pa.Table, dict[str, Any]]:
    """Follow a table with pypaimon's streaming reader for ``plans`` plans (see
    ``tests/oracle/paimon_stream.py``); rows carry ``_row_kind`` and ``_snapshot_id``."""
    out = Path(tmp_path) / f"oracle-stream-{len(list(Path(tmp_path).glob('oracle-stream-*')))}.arrow"
    args = [str(table_path), str(out), "--plans", str(plans)]
    if consumer_id is not None:
        args += ["--consumer-id", consumer_id]
    meta = _run("paimon_stream.py", args)
    with pa.OSFile(str(out), "rb") as source:
        table = pa.ipc.open_file(source).read_all()
    return table, meta


def catalog_steps(catalog: dict[str, str], steps: list[dict[str, Any]], tmp_path: Path) -> list[Any]:
    """Run ``steps`` through a pypaimon catalog (``tests/oracle/paimon_catalog.py``): a
    ``write`` step's ``data`` is an Arrow table (written to an IPC file here), a ``read``
    step's result is the Arrow table pypaimon read. Returns one result per step."""
    workdir = Path(tmp_path) / f"oracle-catalog-{len(list(Path(tmp_path).glob('oracle-catalog-*')))}"
    workdir.mkdir(parents=True)
    job_steps, reads = [], {}
    for i, step in enumerate(steps):
        step = dict(step)
        if step["op"] == "write":
            path = workdir / f"batch-{i}.arrow"
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, step["data"].schema) as writer:
                writer.write_table(step["data"])
            step["data"] = str(path)
        elif step["op"] == "read":
            step["out"] = reads[i] = str(workdir / f"read-{i}.arrow")
        job_steps.append(step)
    job_path = workdir / "job.json"
    job_path.write_text(json.dumps({"catalog": catalog, "steps": job_steps}), encoding="utf-8")
    results = _run("paimon_catalog.py", [str(job_path)])["results"]
    for i, out in reads.items():
        with pa.OSFile(out, "rb") as source:
            results[i] = pa.ipc.open_file(source).read_all()
    return results
