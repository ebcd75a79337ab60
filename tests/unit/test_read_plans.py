"""Files of different schemas in one read (core.kernels.data_file's read plans, built once per
(file fields, read fields, options) and kept between files and reads, and its per-footer
caches): each file must be mapped by its own schema. A renamed, widened, dropped and re-added
(same name, new field id) or added column between the files of one read; every read is checked
against a dict model of what was written, and a file is also read directly after a file of
another schema has left its plan in the cache.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from core.evolution import AddColumn, DropColumn, RenameColumn, UpdateColumnType
from core.fileio import join
from core.kernels import data_file
from core.manifest import live_entries
from core.ops.alter import alter
from core.ops.create import create
from core.table import Table
from core.types import parse_type

N = 3000  # ids per write: a few row groups per file


def evolved_table(tmp_path: Path) -> tuple[Table, dict[int, dict]]:
    """db.t in one bucket, written under three schemas:
    0: id, v INT, a STRING, s STRING;
    1: v renamed w and widened to BIGINT, a dropped and re-added (a new field id), n added;
    2: s renamed t, m added.
    Each write upserts a third of the earlier ids and adds new ones. The model: id -> the
    row as the latest schema reads it (a column its file's schema lacks reads null)."""
    t = Table.locate("db.t", warehouse=str(tmp_path / "wh"))
    create(t, "id BIGINT NOT NULL, v INT, a STRING, s STRING", primary_keys=["id"], options={"bucket": "1"})
    model: dict[int, dict] = {}
    ids = list(range(0, N))
    t.write(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 2 for i in ids], pa.int32()),
                      "a": [f"old-a{i}" for i in ids], "s": [f"s{i}" for i in ids]}))
    for i in ids:  # a of schema 0 is another column than the re-added a: it never shows
        model[i] = {"id": i, "w": i * 2, "a": None, "t": f"s{i}", "n": None, "m": None}
    alter(t, [RenameColumn("v", "w"), UpdateColumnType("w", parse_type("BIGINT")), DropColumn("a"),
              AddColumn("a", parse_type("STRING")), AddColumn("n", parse_type("INT"))])
    ids = list(range(0, N, 3)) + list(range(N, N + 500))
    t.write(pa.table({"id": pa.array(ids, pa.int64()), "w": pa.array([i + 10**10 for i in ids], pa.int64()),
                      "s": [f"s1-{i}" for i in ids], "a": [f"new-a{i}" for i in ids],
                      "n": pa.array([i % 7 for i in ids], pa.int32())}))
    for i in ids:
        model[i] = {"id": i, "w": i + 10**10, "a": f"new-a{i}", "t": f"s1-{i}", "n": i % 7, "m": None}
    alter(t, [RenameColumn("s", "t"), AddColumn("m", parse_type("INT"))])
    ids = list(range(1, N + 500, 3))
    t.write(pa.table({"id": pa.array(ids, pa.int64()), "w": pa.array([-i for i in ids], pa.int64()),
                      "t": [f"t2-{i}" for i in ids], "a": pa.array([None] * len(ids), pa.string()),
                      "n": pa.array([None] * len(ids), pa.int32()), "m": pa.array(ids, pa.int32())}))
    for i in ids:
        model[i] = {"id": i, "w": -i, "a": None, "t": f"t2-{i}", "n": None, "m": i}
    return t, model


def rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_reads_across_three_schemas_match_the_model(tmp_path: Path) -> None:
    t, model = evolved_table(tmp_path)
    columns = ["id", "w", "t", "a", "n", "m"]
    full = t.scan()
    assert full.column_names == columns
    assert rows(full) == [model[i] for i in sorted(model)]
    # key ranges and key lists (one merge across the files of all three schemas) and lookups
    for lo, hi in [(0, 40), (N - 20, N + 30), (N + 490, N + 600)]:
        got = t.scan(where=f"id BETWEEN {lo} AND {hi}")
        assert rows(got) == [model[i] for i in sorted(model) if lo <= i <= hi]
    keys = [0, 1, 2, 3, 4, 5, N - 1, N, N + 1, N + 2, N + 499, N + 500, 10**6]
    got = t.scan(where=f"id IN ({', '.join(map(str, keys))})")
    assert rows(got) == [model[k] for k in keys if k in model]
    found = t.lookup([f"id={k}" for k in keys])
    assert found.rows.to_pylist() == [model[k] for k in keys if k in model]
    # a selection reads some columns of each file: the plan of one selection is not another's
    assert rows(t.scan(select=["id", "a"], where="id BETWEEN 0 AND 5")) == \
        [{"id": i, "a": model[i]["a"]} for i in range(6)]


def test_each_file_is_read_in_its_own_schema_after_another_schema_s_plan(tmp_path: Path) -> None:
    """read_file of the same read fields on the files of schemas 0, 1, 2 and back to 0, in one
    process: each returns the columns its own schema wrote under those field ids."""
    t, _ = evolved_table(tmp_path)
    read_schema = t.schema
    schemas = {i: t.schemas.schema(i) for i in t.schemas.list_ids()}
    metas = sorted((e.file for e in live_entries(t.manifests(), t.snapshots.latest())), key=lambda m: m.schema_id)
    assert [m.schema_id for m in metas] == [0, 1, 2]
    bucket_dir = join(t.path, "bucket-0")
    fields = list(read_schema.fields)

    def read(meta):
        return data_file.read_file(join(bucket_dir, meta.file_name), meta, schemas[meta.schema_id], fields,
                                   t.file_io, system_columns=False)

    for meta in metas + metas[:1]:
        got = read(meta)
        assert got.column_names == ["id", "w", "t", "a", "n", "m"]
        assert got.schema.field("w").type == pa.int64()
        first = got.slice(0, 1).to_pylist()[0]
        i = first["id"]
        expected = {
            0: {"id": i, "w": i * 2, "a": None, "t": f"s{i}", "n": None, "m": None},
            1: {"id": i, "w": i + 10**10, "a": f"new-a{i}", "t": f"s1-{i}", "n": i % 7, "m": None},
            2: {"id": i, "w": -i, "a": None, "t": f"t2-{i}", "n": None, "m": i},
        }[meta.schema_id]
        assert first == expected


@pytest.mark.parametrize("needed", [frozenset({"id", "a"}), frozenset({"id", "w"}), None])
def test_plans_differ_by_the_columns_needed(tmp_path: Path, needed: frozenset[str] | None) -> None:
    """The columns not needed read as null, in every file; the needed ones as written."""
    t, _ = evolved_table(tmp_path)
    read_schema = t.schema
    schemas = {i: t.schemas.schema(i) for i in t.schemas.list_ids()}
    metas = sorted((e.file for e in live_entries(t.manifests(), t.snapshots.latest())), key=lambda m: m.schema_id)
    for meta in metas:
        got = data_file.read_file(join(t.path, "bucket-0", meta.file_name), meta, schemas[meta.schema_id],
                                  list(read_schema.fields), t.file_io, system_columns=True, needed=needed)
        assert got.column_names[-2:] == ["_SEQUENCE_NUMBER", "_VALUE_KIND"]
        for name in ["w", "a", "t", "n", "m"]:
            if needed is not None and name not in needed:
                assert got.column(name).null_count == got.num_rows, (meta.schema_id, name)
        if needed is None or "w" in needed:
            assert got.column("w").null_count == 0


def test_positions_of_chosen_row_groups_count_every_row_before_them() -> None:
    """data_file._positions against one arange per chosen group (the hand model)."""
    import numpy as np

    rng = np.random.default_rng(5)
    for _ in range(50):
        group_rows = [int(n) for n in rng.integers(0, 9, rng.integers(1, 8))]
        groups = sorted(int(g) for g in rng.choice(len(group_rows), rng.integers(0, len(group_rows) + 1),
                                                    replace=False))
        starts = [sum(group_rows[:g]) for g in range(len(group_rows))]
        expected = [starts[g] + k for g in groups for k in range(group_rows[g])]
        assert data_file._positions(group_rows, groups).to_pylist() == expected
        assert data_file._positions(group_rows, None).to_pylist() == list(range(sum(group_rows)))
