"""deltalake (delta-rs), what a Python user would otherwise pick, in .venv-bench-delta.
A Delta table partitioned by dt (no buckets: Delta has none). ``create`` makes the empty
table (version 0), the base is version 1 (``read_snapshot1`` reads version 1); upserts and
deletes are ``DeltaTable.merge`` on (id, dt): ``when_matched_update_all`` +
``when_not_matched_insert_all``, then ``when_matched_delete`` with the delete rows as the
source. Reads: ``to_pyarrow_dataset().to_table()``, the id range as a dataset filter (file
skipping by Delta's stats, row-group pruning by Parquet's). ``compact`` is
``optimize.compact()``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import COLUMNS, PARTITION, Recorder, load_inputs, load_meta, parse_args  # noqa: E402

import deltalake  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402

ON = "t.id = s.id AND t.dt = s.dt"


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    meta = load_meta(args.data)
    base, upserts, deletes = load_inputs(args.data)
    base, upserts = base.select(COLUMNS), upserts.select(COLUMNS)
    lo, hi = meta["range"]
    path = str(Path(args.work) / "delta")
    rec = Recorder("deltalake")

    with rec.step("create"):
        DeltaTable.create(path, schema=base.schema, partition_by=[PARTITION])
    with rec.step("write_base"):
        write_deltalake(path, base, mode="append")
    with rec.step("upsert"):
        (DeltaTable(path).merge(upserts, predicate=ON, source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    with rec.step("delete"):
        (DeltaTable(path).merge(deletes, predicate=ON, source_alias="s", target_alias="t")
         .when_matched_delete().execute())
    with rec.step("read_latest") as r:
        r["rows"] = DeltaTable(path).to_pyarrow_dataset().to_table().num_rows
    with rec.step("read_range") as r:
        f = (ds.field("id") >= lo) & (ds.field("id") < hi)
        r["rows"] = DeltaTable(path).to_pyarrow_dataset().to_table(filter=f).num_rows
    with rec.step("read_snapshot1") as r:
        r["rows"] = DeltaTable(path, version=1).to_pyarrow_dataset().to_table().num_rows
    with rec.step("compact"):
        metrics = DeltaTable(path).optimize.compact()
    rec.info["compact"] = {k: metrics.get(k) for k in ("numFilesAdded", "numFilesRemoved")}
    rec.info["files_latest"] = len(DeltaTable(path).file_uris())
    with rec.step("read_compacted") as r:
        r["rows"] = DeltaTable(path).to_pyarrow_dataset().to_table().num_rows
    rec.info["deltalake"] = deltalake.__version__
    rec.info["pyarrow"] = pa.__version__
    rec.emit()
    sys.stdout.flush()
    sys.stderr.flush()
    # delta-rs's runtime threads sometimes abort the interpreter's teardown ("terminate called
    # without an active exception"); the results are out, so skip the teardown.
    os._exit(0)


if __name__ == "__main__":
    main()
