"""Atomic create-if-absent on a real S3 server: the primitive every snapshot commit rests on."""

import threading

import pyarrow as pa
import pytest

from core.errors import UsageError
from core.fileio import FileIO
from core.ops.create import create
from core.table import Table

pytestmark = pytest.mark.s3


def test_try_create_has_exactly_one_winner_among_racing_threads(s3):
    base = s3.warehouse()
    for trial in range(10):
        path = f"{base}/race/snapshot-{trial}"
        winners, errors = [], []

        def attempt(i):
            try:
                if FileIO.for_uri(path, s3.storage_options()).try_create(path, str(i).encode()):
                    winners.append(i)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(winners) == 1
        assert FileIO.for_uri(path, s3.storage_options()).read_bytes(path) == str(winners[0]).encode()


def test_a_store_without_conditional_puts_refuses_to_commit_without_a_lock(s3, tmp_path):
    options = s3.storage_options(**{"lakectl.conditional-put": False})
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=options)
    with pytest.raises(UsageError, match="lock"):
        create(t, "id BIGINT", primary_keys=["id"])
    assert not t.exists()
    locked = s3.storage_options(**{"lakectl.conditional-put": False, "lakectl.lock-file": str(tmp_path / "commit.lock")})
    t = Table.locate("db.t", warehouse=s3.warehouse(), storage_options=locked)
    create(t, "id BIGINT", primary_keys=["id"])
    t.write(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert sorted(r["id"] for r in t.scan().to_pylist()) == [1, 2]


def test_table_lifecycle_on_s3(s3):
    t = Table.locate("db.orders", warehouse=s3.warehouse(), storage_options=s3.storage_options())
    create(t, "id BIGINT, v STRING, dt STRING", primary_keys=["id", "dt"], partition_keys=["dt"],
           options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]}))
    t.write(pa.table({"id": [1], "v": ["z"], "dt": ["x"]}))
    t.compact(full=True)
    assert sorted((r["id"], r["v"]) for r in t.scan().to_pylist()) == [(1, "z"), (2, "b"), (3, "c")]
    assert sorted((r["id"], r["v"]) for r in t.scan(snapshot_id=1).to_pylist()) == [(1, "a"), (2, "b"), (3, "c")]
    result = t.expire(retain_max=1, retain_min=1, dry_run=False)
    assert result.snapshots_expired == [1, 2]
    assert sorted((r["id"], r["v"]) for r in t.scan().to_pylist()) == [(1, "z"), (2, "b"), (3, "c")]


def test_manifests_are_read_at_once_on_s3_and_in_order(s3, monkeypatch):
    """A snapshot of many manifests on S3: they are fetched by several threads at once, and
    the entries come back in list order (a DELETE after its ADD), so the rows read equal the
    rows written (an independent model: the dict of the last value per key)."""
    from core.manifest import ManifestIO

    t = Table.locate("db.many", warehouse=s3.warehouse(), storage_options=s3.storage_options())
    create(t, "id BIGINT, v STRING, p INT", primary_keys=["id", "p"], partition_keys=["p"],
           options={"bucket": "1", "manifest.merge-min-count": "999"})
    model = {}
    for i in range(8):  # updates of earlier keys, and compactions (DELETE entries) among them
        ids = [i, i // 2]
        t.write(pa.table({"id": ids, "v": [f"w{i}"] * 2, "p": [i % 3, i // 2 % 3]}))
        model.update({(k, p): f"w{i}" for k, p in zip(ids, [i % 3, i // 2 % 3])})
    threads = set()
    real = ManifestIO.read_manifest

    def noting(self, name, *filters):
        threads.add(threading.get_ident())
        return real(self, name, *filters)

    monkeypatch.setattr(ManifestIO, "read_manifest", noting)
    rows = t.scan().to_pylist()
    assert {(r["id"], r["p"]): r["v"] for r in rows} == model and len(rows) == len(model)
    assert len(threads) > 1
    one = t.scan(where="p = 1").to_pylist()
    assert {(r["id"], r["p"]): r["v"] for r in one} == {k: v for k, v in model.items() if k[1] == 1}


def test_a_store_opened_again_reuses_its_client_but_never_across_credentials(s3, monkeypatch):
    """A new S3 client costs ~0.1 s of CPU, and one command opens its table many times: the
    second round of open, write and scan makes no new client, nor does another thread. Other
    credentials get their own client (so the server's refusal is theirs)."""
    import s3fs

    made = []
    real = s3fs.S3FileSystem.set_session

    async def counting(self, *args, **kwargs):
        if self._s3 is None:
            made.append(self)
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "set_session", counting)
    s3fs.S3FileSystem.clear_instance_cache()  # clients earlier tests of this process left
    warehouse, options = s3.warehouse(), s3.storage_options()
    create(Table.locate("db.t", warehouse=warehouse, storage_options=options), "id BIGINT", primary_keys=["id"])

    def round_trip(i: int) -> list[int]:
        t = Table.open("db.t", warehouse=warehouse, storage_options=options)
        t.write(pa.table({"id": pa.array([i], pa.int64())}))
        return sorted(r["id"] for r in t.scan().to_pylist())

    assert round_trip(1) == [1]
    first = len(made)
    assert first >= 1
    assert round_trip(2) == [1, 2]
    assert len(made) == first  # the same client served the second round
    assert FileIO.for_uri(warehouse, options).fs is FileIO.for_uri(warehouse, dict(options)).fs

    wrong = s3.storage_options(secret="not-the-secret")
    with pytest.raises(Exception, match="(?i)denied|signature|credentials|refused"):
        Table.open("db.t", warehouse=warehouse, storage_options=wrong).scan()
    assert len(made) == first + 1  # the refused credentials' own client
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(round_trip(3)))
    thread.start()
    thread.join()
    assert elsewhere == [[1, 2, 3]] and len(made) == first + 1
