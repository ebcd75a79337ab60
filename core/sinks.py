"""Result files for ``scan --output``: Parquet, CSV or JSON lines, by extension.

``write_output_parts`` writes a result part by part (the local engine's splits), so the whole
result is never in memory; ``write_output`` writes one table.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from core.errors import UsageError
from core.kernels.write import dictionary_columns
from core.text_values import csv_line, text_value
from core.text_values import json_value as text_json_value

# Parts (splits) are gathered into row groups of about this much Arrow data: fewer, larger
# row groups than one per split, and a bounded amount held.
_ROW_GROUP_BYTES = 8 << 20

_EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def output_format(path: str) -> str:
    for ext, fmt in _EXTENSIONS.items():
        if path.lower().endswith(ext):
            return fmt
    raise UsageError(f"--output {path!r} must end in .parquet, .csv or .jsonl")


def write_output(data: pa.Table, path: str, json_value: Callable[[Any], Any] | None = None) -> int:
    """Write the rows to ``path`` (atomically: a temp file renamed into place). Returns bytes written."""
    return write_output_parts([data], data.schema, path, json_value)[1]


def write_output_parts(parts: Iterable[pa.Table], schema: pa.Schema, path: str,
                       json_value: Callable[[Any], Any] | None = None) -> tuple[int, int]:
    """Write the parts' rows, in order, as one file at ``path`` (atomically: a temp file renamed
    into place); each part is written and let go before the next is asked for.

    Returns:
        (rows written, bytes of the file).

    Raises:
        UsageError: the file cannot be written.
    """
    fmt = output_format(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    rows = 0
    try:
        if fmt == "parquet":
            with pq.ParquetWriter(tmp, schema, compression="zstd", use_dictionary=dictionary_columns(schema)) as writer:
                pending: list[pa.Table] = []
                for part in parts:
                    pending.append(part)
                    rows += part.num_rows
                    if sum(p.nbytes for p in pending) >= _ROW_GROUP_BYTES:
                        writer.write_table(pa.concat_tables(pending))
                        pending = []
                if pending or rows == 0:
                    writer.write_table(pa.concat_tables(pending) if pending else schema.empty_table())
        elif fmt == "csv":
            # The text encoding scan prints and write reads back (core.text_values).
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                f.write(csv_line(schema.names))
                for part in parts:
                    columns = [col.to_pylist() for col in part.columns]
                    f.write("".join(csv_line([text_value(v) for v in row]) for row in zip(*columns)))
                    rows += part.num_rows
        else:
            convert = json_value or text_json_value
            with open(tmp, "w", encoding="utf-8") as f:
                for part in parts:
                    for row in part.to_pylist():
                        f.write(json.dumps({k: convert(v) for k, v in row.items()}, ensure_ascii=False) + "\n")
                    rows += part.num_rows
        os.replace(tmp, path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return rows, os.path.getsize(path)


def directory_size(path: str) -> int:
    """Bytes under a directory (Spark writes a directory of part files), or of one file."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)
