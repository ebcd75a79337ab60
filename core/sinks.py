"""Result files for ``scan --output``: Parquet, CSV or JSON lines, by extension."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from core.errors import UsageError

_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def output_format(path: str) -> str:
    for ext, fmt in _EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fmt
    raise UsageError(f"--output {path!r} must end in .parquet, .csv or .jsonl")


def write_output(data: pa.Table, path: str, json_value=None) -> int:
    """Write the rows to ``path`` (atomically: a temp file renamed into place). Returns bytes written."""
    fmt = output_format(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        if fmt == "parquet":
            pq.write_table(data, tmp, compression="zstd")
        elif fmt == "csv":
            pacsv.write_csv(data, tmp)
        else:
            convert = json_value or (lambda v: v)
            with open(tmp, "w", encoding="utf-8") as f:
                for row in data.to_pylist():
                    f.write(json.dumps({k: convert(v) for k, v in row.items()}) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return os.path.getsize(path)


def directory_size(path: str) -> int:
    """Bytes under a directory (Spark writes a directory of part files), or of one file."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)
