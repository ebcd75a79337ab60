"""Dynamic bucket mode (a primary-key table with ``bucket=-1``) against Java Paimon 1.0.

Java's writers put each key in the bucket its HASH index names (``index/`` files listed in
the snapshot's index manifest) and give new keys buckets that fill up to
``dynamic-bucket.target-row-num``. lakectl must keep that index exactly as Java does, so
that writes alternating between lakectl and Java never put one key in two buckets: Java
then reads no duplicate keys, and both read the same rows at every snapshot.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from java_oracle import java_read, java_run, lakectl_rows, sort_rows
from test_java_interop import assert_same_at_every_snapshot, open_table

from core.bucket import hash_codes
from core.dynamic_bucket import read_hash_index
from core.index_manifest import HASH_INDEX, IndexManifestIO
from core.kernels.records import KEY_PREFIX
from core.manifest import live_entries
from core.ops.create import create
from core.ops.orphans import remove_orphan_files
from core.ops.tags import create_tag
from core.table import Table

pytestmark = [pytest.mark.interop, pytest.mark.java]

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string()), ("dt", pa.string())])
FIELDS = [{"name": "k", "type": "INT NOT NULL"}, {"name": "v", "type": "STRING"},
          {"name": "dt", "type": "STRING NOT NULL"}]


def dt_of(k: int) -> str:
    return f"2024-01-0{k % 2 + 1}"


def rows(keys: Any, tag: str) -> list[list[Any]]:
    return [[k, f"{tag}{k}", dt_of(k)] for k in keys]


def arrow(data: list[list[Any]], kinds: list[str] | None = None) -> pa.Table:
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in data], schema=SCHEMA)
    if kinds is not None:
        table = table.append_column("op", pa.array(kinds))
    return table


class Model:
    """The rows a deduplicate table holds after the writes so far."""

    def __init__(self, partitioned: bool) -> None:
        self.partitioned = partitioned
        self.rows: dict[tuple, list[Any]] = {}

    def apply(self, data: list[list[Any]], kinds: list[str] | None = None) -> None:
        for i, r in enumerate(data):
            key = (r[0], r[2]) if self.partitioned else (r[0],)
            if kinds and kinds[i] in ("-D", "-U"):
                self.rows.pop(key, None)
            else:
                self.rows[key] = list(r)

    def expected(self) -> list[list[Any]]:
        return sort_rows(self.rows.values())


def key_buckets(table: Table) -> dict[tuple, set[int]]:
    """(partition, key values) -> the buckets holding a record of it, over every live file."""
    schema = table.schema
    keys = [KEY_PREFIX + k for k in schema.trimmed_primary_keys]
    out: dict[tuple, set[int]] = {}
    for e in live_entries(table.manifests(), table.latest_snapshot()):
        path = posixpath.join(schema.bucket_dir(table.path, e.partition, e.bucket), e.file.file_name)
        data = pq.read_table(path, columns=keys)
        for values in zip(*(data.column(k).to_pylist() for k in keys)):
            out.setdefault((e.partition, values), set()).add(e.bucket)
    return out


def hash_index(table: Table) -> dict[tuple[bytes, int], list[int]]:
    """(partition, bucket) -> the hash codes of its HASH index file, at the latest snapshot."""
    imio = IndexManifestIO(table.file_io, table.path)
    out = {}
    for e in imio.read(table.latest_snapshot().index_manifest):
        assert e.index_file.index_type == HASH_INDEX
        hashes = read_hash_index(table.file_io, imio.index_path(e.index_file.file_name)).tolist()
        assert len(hashes) == e.index_file.row_count and 4 * len(hashes) == e.index_file.file_size
        out[(e.partition, e.bucket)] = hashes
    return out


def assert_one_bucket_per_key(table: Table, label: str) -> int:
    """Every key lives in exactly one bucket, and the hash index names that bucket (and only
    that one) for the key's hash; returns the number of (partition, bucket) pairs."""
    placed = key_buckets(table)
    spread = {k: b for k, b in placed.items() if len(b) != 1}
    assert not spread, f"{label}: keys in several buckets: {spread}"
    index = hash_index(table)
    owner: dict[tuple[bytes, int], int] = {}
    for (partition, bucket), hashes in index.items():
        assert len(set(hashes)) == len(hashes), f"{label}: a hash repeats in one index file"
        for h in hashes:
            assert owner.setdefault((partition, h), bucket) == bucket, f"{label}: hash {h} in two buckets"
    key_types = [f.type for f in table.schema.key_fields]
    for (partition, values), buckets in placed.items():
        (h,) = hash_codes([pa.array([v]) for v in values], key_types).tolist()
        assert owner.get((partition, h)) == next(iter(buckets)), f"{label}: index misses key {values}"
    return len({(p, b) for (p, _), bs in placed.items() for b in bs})


def check(table: Table, model: Model, label: str) -> int:
    """Java and lakectl read the model's rows; Java reads no duplicate keys; one bucket per key."""
    java_rows, _ = java_read(table.path)
    assert java_rows == model.expected(), f"{label}: Java's rows differ from the model"
    assert lakectl_rows(table.scan()) == java_rows, f"{label}: lakectl's rows differ from Java's"
    return assert_one_bucket_per_key(table, label)


@pytest.mark.parametrize("partitioned", [False, True], ids=["unpartitioned", "partitioned"])
def test_lakectl_and_java_alternate_on_a_dynamic_bucket_table(tmp_path: Path, partitioned: bool) -> None:
    table = Table.locate("db.dyn", warehouse=str(tmp_path / "wh"))
    create(table, "k INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["k", "dt"] if partitioned else ["k"],
           partition_keys=["dt"] if partitioned else [], options={"dynamic-bucket.target-row-num": "7"})
    assert "bucket" not in table.schema.options and table.schema.num_buckets == -1  # Paimon's default
    model = Model(partitioned)

    def lakectl_write(data: list[list[Any]], kinds: list[str] | None = None) -> None:
        table.write(arrow(data, kinds), row_kind_column="op" if kinds else None)
        model.apply(data, kinds)

    def java_write(data: list[list[Any]], kinds: list[str] | None = None) -> None:
        java_run(table.path, [{"op": "write", "rows": data, **({"kinds": kinds} if kinds else {})}])
        model.apply(data, kinds)

    lakectl_write(rows(range(40), "l1-"))
    check(table, model, "lakectl first")
    # Java updates keys lakectl placed, deletes one and adds new keys.
    java_write(rows([*range(20, 60), 3], "j1-"), kinds=["+I"] * 40 + ["-D"])
    check(table, model, "Java on lakectl")
    # lakectl updates keys Java placed (and its own), deletes one of Java's, adds new ones.
    data = rows([*range(50, 80), 21, 45], "l2-")
    lakectl_write(data, kinds=["+I"] * 30 + ["+U", "-D"])
    check(table, model, "lakectl on Java")
    java_write(rows([*range(0, 10), *range(75, 95)], "j2-"))
    check(table, model, "Java again")
    table.compact(full=True)
    check(table, model, "after lakectl's full compaction")
    java_write(rows(range(30, 35), "j3-"))
    java_run(table.path, [{"op": "compact", "full": True}])
    check(table, model, "after Java's full compaction")
    lakectl_write(rows([*range(90, 110), 1, 31], "l3-"))
    pairs = check(table, model, "lakectl after compactions")
    assert pairs >= (2 * 8 if partitioned else 14), "target-row-num 7 should have opened many buckets"
    assert assert_same_at_every_snapshot(table, "alternating") >= 8

    # Expire on lakectl's side, then both keep writing the same keys.
    result = table.expire(retain_max=2, retain_min=1, older_than="0s", dry_run=False)
    assert result.snapshots_expired
    check(table, model, "after expire")
    java_write(rows(range(100, 120), "j4-"))
    lakectl_write(rows(range(110, 125), "l4-"))
    check(table, model, "writes after expire")
    assert assert_same_at_every_snapshot(table, "after expire") >= 3


def test_lakectl_assigns_buckets_and_hash_index_files_as_java_does(tmp_path: Path) -> None:
    """The same writes through Java and through lakectl give the same buckets, holding the
    same hash codes: lakectl's assigner is Java's (fill buckets in order up to the target,
    then open the smallest unused id)."""
    writes = [rows(range(0, 45), "a"), rows([*range(40, 70), *range(0, 45, 4)], "b"), rows(range(200, 190, -1), "c")]
    options = {"dynamic-bucket.target-row-num": "6"}
    java_path = tmp_path / "wh" / "db.db" / "java"
    java_run(java_path, [{"op": "write", "rows": w} for w in writes],
             create={"fields": FIELDS, "primaryKeys": ["k", "dt"], "partitionKeys": ["dt"], "options": options})
    mine = Table.locate("db.mine", warehouse=str(tmp_path / "wh"))
    create(mine, "k INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["k", "dt"], partition_keys=["dt"],
           options=options)
    for w in writes:
        mine.write(arrow(w))
    java = open_table(java_path)
    assert {k: sorted(v) for k, v in hash_index(mine).items()} == {k: sorted(v) for k, v in hash_index(java).items()}
    assert key_buckets(mine) == key_buckets(java)


def test_lakectl_continues_a_java_dynamic_bucket_table(tmp_path: Path) -> None:
    """A table Java created without a bucket option (so bucket=-1) and wrote: lakectl's writes
    go to the buckets Java's index names; Java then continues."""
    path = tmp_path / "wh" / "db.db" / "javas"
    java_run(path, [{"op": "write", "rows": rows(range(30), "j")}],
             create={"fields": FIELDS, "primaryKeys": ["k", "dt"], "partitionKeys": ["dt"],
                     "options": {"dynamic-bucket.target-row-num": "4"}})
    table = open_table(path)
    model = Model(partitioned=True)
    model.apply(rows(range(30), "j"))
    before = hash_index(table)
    table.write(arrow(rows(range(10, 40), "l")))
    model.apply(rows(range(10, 40), "l"))
    after = hash_index(table)
    # Buckets that only got known keys keep their index file's hashes; Java's old files stay valid.
    for slot, hashes in before.items():
        assert set(hashes) <= set(after[slot])
    check(table, model, "lakectl on Java")
    java_run(path, [{"op": "write", "rows": rows(range(35, 45), "j2")}])
    model.apply(rows(range(35, 45), "j2"))
    check(table, model, "Java on lakectl")


def test_overwrite_of_a_partition_resets_its_index_and_java_continues(tmp_path: Path) -> None:
    table = Table.locate("db.ow", warehouse=str(tmp_path / "wh"))
    create(table, "k INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["k", "dt"], partition_keys=["dt"],
           options={"dynamic-bucket.target-row-num": "5"})
    model = Model(partitioned=True)
    table.write(arrow(rows(range(40), "a")))
    model.apply(rows(range(40), "a"))
    part = [r for r in rows(range(100, 106), "o") if r[2] == dt_of(0)]  # 3 rows into one partition
    table.write(arrow(part), mode="overwrite")
    model.rows = {k: r for k, r in model.rows.items() if r[2] != dt_of(0)}
    model.apply(part)
    index = hash_index(table)
    replaced = [slot for slot in index if table.schema.partition_values(slot[0]) == (dt_of(0),)]
    assert len(replaced) == 1 and len(index[replaced[0]]) == 3  # one fresh bucket for the 3 new keys
    check(table, model, "after overwrite")
    java_run(table.path, [{"op": "write", "rows": rows(range(0, 110, 3), "j")}])
    model.apply(rows(range(0, 110, 3), "j"))
    check(table, model, "Java after the overwrite")


def test_expire_keeps_the_index_retained_snapshots_and_tags_need(tmp_path: Path) -> None:
    """expire deletes the index files and index manifests only expired snapshots used;
    remove-orphan-files keeps every index file a snapshot or tag lists; Java then writes."""
    table = Table.locate("db.ex", warehouse=str(tmp_path / "wh"))
    create(table, "k INT NOT NULL, v STRING, dt STRING NOT NULL", primary_keys=["k"],
           options={"dynamic-bucket.target-row-num": "5"})
    model = Model(partitioned=False)
    for i in range(5):
        data = rows(range(i * 6, i * 6 + 10), f"w{i}-")
        table.write(arrow(data))
        model.apply(data)
    table.compact(full=True)
    create_tag(table, "t2", snapshot_id=2)
    index_dir = Path(table.path) / "index"
    manifests = {sid: table.snapshots.snapshot(sid).index_manifest for sid in range(1, 7)}
    assert len(set(manifests.values())) == 5  # every write placed new keys; the compaction kept 5's
    before = {p.name for p in index_dir.iterdir()}
    result = table.expire(retain_min=2, older_than="0s", dry_run=False)
    assert result.snapshots_expired == [1, 2, 3, 4]
    imio = IndexManifestIO(table.file_io, table.path)
    needed = set()
    for snap in [table.snapshots.snapshot(5), table.snapshots.snapshot(6), table.tags.snapshot("t2")]:
        needed |= {e.index_file.file_name for e in imio.read(snap.index_manifest)}
    manifest_dir = Path(table.path) / "manifest"
    assert {sid for sid, name in manifests.items() if (manifest_dir / name).is_file()} == {2, 5, 6}
    left = {p.name for p in index_dir.iterdir()}
    assert left == needed and left < before  # what only expired snapshots used went; nothing needed did
    remove_orphan_files(table, older_than="0s", force=True)
    assert {p.name for p in index_dir.iterdir()} == needed
    assert lakectl_rows(table.scan(tag="t2")) == java_read(table.path, tag="t2")[0]
    check(table, model, "after expire and orphan removal")
    java_run(table.path, [{"op": "write", "rows": rows(range(0, 40, 2), "j")}])
    model.apply(rows(range(0, 40, 2), "j"))
    check(table, model, "Java after expire")
