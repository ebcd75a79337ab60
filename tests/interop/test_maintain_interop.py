"""One maintain run over a warehouse of mixed tables brings each to the state its options ask
for, and both official readers (pypaimon and Java Paimon 1.0) read every table afterwards."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from java_oracle import java_read, java_run, lakectl_rows, sort_rows
from oracle import official_read

from core.health import measure
from core.ops.create import create
from core.ops.maintain import Policy, maintain
from core.ops.tags import create_tag
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]


def _make(wh: str, name: str, schema: str, *, pk: list[str] = (), parts: list[str] = (),
          options: dict[str, str]) -> Table:
    create(Table.locate(f"db.{name}", warehouse=wh), schema, primary_keys=list(pk), partition_keys=list(parts),
           options={"write-only": "true", **options})
    return Table.open(f"db.{name}", warehouse=wh)


def _rows(ids, v: str, dt: str | None = None) -> pa.Table:
    cols = {"id": pa.array(list(ids), pa.int64()), "v": pa.array([v] * len(ids))}
    if dt is not None:
        cols["dt"] = pa.array([dt] * len(ids))
    return pa.table(cols)


def test_mixed_warehouse_maintained_and_read_by_java_and_pypaimon(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    pk = _make(wh, "pk", "id BIGINT NOT NULL, v STRING", pk=["id"],
               options={"bucket": "1", "num-sorted-run.compaction-trigger": "3",
                        "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    for i in range(5):
        pk.write(_rows(range(i * 3, i * 3 + 5), f"w{i}"))
    app = _make(wh, "app", "id BIGINT NOT NULL, v STRING", options={"bucket": "-1"})
    for i in range(6):
        app.write(_rows([i], "a"))
    part = _make(wh, "part", "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", parts=["dt"],
                 options={"partition.expiration-time": "30d", "partition.timestamp-formatter": "yyyy-MM-dd"})
    part.write(_rows([1, 2], "old", "2000-01-01"))
    today = time.strftime("%Y-%m-%d")
    part.write(_rows([3], "new", today))
    tagged = _make(wh, "tagged", "id BIGINT NOT NULL, v STRING", options={})
    tagged.write(_rows([1], "t"))
    create_tag(tagged, "short", time_retained="1s")
    create_tag(tagged, "long", time_retained="30d")
    broken = _make(wh, "broken", "id BIGINT NOT NULL, v STRING", options={})
    broken.write(_rows([1], "b"))
    shutil.rmtree(Path(broken.path) / "manifest")
    # A table Java Paimon wrote: four commits of one bucket, past its sorted-run trigger.
    model: dict[int, str] = {}
    steps = []
    for i in range(4):
        batch = [[k, f"j{i}"] for k in range(i * 2, i * 2 + 4)]
        model.update({k: v for k, v in batch})
        steps.append({"op": "write", "rows": batch})
    java_run(Path(wh) / "db.db" / "javaw", steps, create={
        "fields": [{"name": "id", "type": "BIGINT NOT NULL"}, {"name": "v", "type": "STRING"}],
        "primaryKeys": ["id"], "options": {"bucket": "1", "write-only": "true",
                                           "num-sorted-run.compaction-trigger": "3",
                                           "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"}})
    assert measure(Table.open("db.javaw", warehouse=wh)).max_sorted_runs >= 3
    time.sleep(1.2)  # the short tag's TTL passes

    expected_pk = pk.scan().sort_by("id")
    names = ["db.app", "db.broken", "db.javaw", "db.part", "db.pk", "db.tagged"]
    reports = {r.table: r for r in maintain(names, lambda n: Table.open(n, warehouse=wh), lambda n: Policy())}
    assert {n: r.status for n, r in reports.items()} == {
        "db.app": "done", "db.broken": "failed", "db.javaw": "done", "db.part": "done", "db.pk": "done",
        "db.tagged": "done"}
    assert [a.verb for a in reports["db.javaw"].actions] == ["compact", "expire", "remove-orphan-files"]

    pk, app, part, tagged, javaw = (Table.open(f"db.{n}", warehouse=wh)
                                    for n in ("pk", "app", "part", "tagged", "javaw"))
    assert measure(javaw).max_sorted_runs == 1 and measure(javaw).snapshots <= 2
    assert measure(pk).max_sorted_runs < 3 and measure(pk).snapshots <= 2
    assert measure(app).files == 1  # six small files compacted into one
    assert part.scan().column("dt").to_pylist() == [today]
    assert tagged.tags.names() == ["long"]

    expected = {"pk": expected_pk, "app": _rows(range(6), "a"), "part": _rows([3], "new", today),
                "tagged": _rows([1], "t"),
                "javaw": pa.table({"id": pa.array(sorted(model), pa.int64()),
                                   "v": pa.array([model[k] for k in sorted(model)])})}
    for name, table in (("pk", pk), ("app", app), ("part", part), ("tagged", tagged), ("javaw", javaw)):
        ours = lakectl_rows(table.scan())
        assert ours == lakectl_rows(expected[name]), name
        java_rows, _ = java_read(table.path)
        assert java_rows == ours, name
        if name == "javaw":
            continue  # pypaimon 2.1 reads no table Java 1.0 wrote (its manifests lack _VALUE_STATS_COLS)
        official, _ = official_read(table.path, tmp_path)
        assert sort_rows(lakectl_rows(official.select(table.scan().column_names))) == ours, name


def test_update_time_expiry_and_a_capped_append_compaction_read_by_java(tmp_path: Path, monkeypatch) -> None:
    """partition.expiration-strategy=update-time drops the partitions whose files are old, and
    a non-full compaction of a bucketed append table rewrites compaction.max.file-num files
    (Paimon's 5): Java reads what lakectl reads after each."""
    import core.kernels.write as write_kernel
    from core.ops.partitions import expire_partitions

    wh = str(tmp_path / "wh")
    part = _make(wh, "upd", "id BIGINT NOT NULL, v STRING, dt STRING NOT NULL", parts=["dt"],
                 options={"partition.expiration-time": "1d", "partition.expiration-strategy": "update-time"})
    old = write_kernel.local_wall_clock_millis() - 3 * 86_400_000
    with monkeypatch.context() as m:
        m.setattr(write_kernel, "local_wall_clock_millis", lambda: old)
        part.write(_rows([1, 2], "old", "a"))
    part.write(_rows([3], "new", "b"))
    assert expire_partitions(part).partitions == ({"dt": "a"},)
    assert lakectl_rows(part.scan()) == lakectl_rows(_rows([3], "new", "b"))
    assert java_read(part.path)[0] == lakectl_rows(part.scan())

    app = _make(wh, "capped", "id BIGINT NOT NULL, v STRING", options={"bucket": "1", "bucket-key": "id"})
    for i in range(12):
        app.write(_rows([i], "a"))
    result = app.compact(full=False)
    assert (result.files_before, result.files_after, measure(app).files) == (5, 1, 8)
    assert lakectl_rows(app.scan()) == lakectl_rows(_rows(range(12), "a"))
    assert java_read(app.path)[0] == lakectl_rows(app.scan())
