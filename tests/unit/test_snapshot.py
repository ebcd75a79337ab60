import json

import pytest

from core.errors import CorruptMetadataError, NotFoundError
from core.fileio import FileIO
from core.snapshot import Snapshot, SnapshotManager


def _snap(i, t=1000):
    return Snapshot(id=i, schema_id=0, base_manifest_list="b", delta_manifest_list="d", commit_user="u",
                    commit_identifier=9223372036854775807, commit_kind="APPEND", time_millis=t)


def test_json_uses_paimon_names_and_omits_nulls():
    obj = json.loads(_snap(3).to_json())
    assert obj["schemaId"] == 0 and obj["commitKind"] == "APPEND" and obj["version"] == 3
    assert "changelogManifestList" not in obj and "watermark" not in obj
    assert Snapshot.from_json(_snap(3).to_json()) == _snap(3)


def test_unknown_keys_survive_a_round_trip():
    obj = _snap(1).to_dict() | {"tagCreateTime": [2024, 1, 1, 0, 0, 0, 0]}
    again = Snapshot.from_dict(obj).to_dict()
    assert again["tagCreateTime"] == [2024, 1, 1, 0, 0, 0, 0]


def test_latest_hint_is_checked_against_the_files(tmp_path):
    io = FileIO.for_uri(str(tmp_path))
    mgr = SnapshotManager(io, str(tmp_path))
    assert mgr.latest_id() is None and mgr.latest() is None
    for i in (1, 2, 3):
        assert mgr.try_publish(_snap(i))
    mgr.write_latest_hint(1)  # stale: snapshot-2 exists, so the hint is ignored
    assert mgr.latest_id() == 3
    (tmp_path / "snapshot" / "LATEST").write_text("garbage")
    assert mgr.latest_id() == 3
    mgr.write_latest_hint(3)
    assert mgr.latest_id() == 3 and mgr.earliest_id() == 1


def test_publish_never_overwrites(tmp_path):
    io = FileIO.for_uri(str(tmp_path))
    mgr = SnapshotManager(io, str(tmp_path))
    assert mgr.try_publish(_snap(1, t=1))
    assert not mgr.try_publish(_snap(1, t=2))
    assert mgr.snapshot(1).time_millis == 1


def test_time_travel_and_errors(tmp_path):
    io = FileIO.for_uri(str(tmp_path))
    mgr = SnapshotManager(io, str(tmp_path))
    for i, t in ((1, 100), (2, 200), (3, 300)):
        mgr.try_publish(_snap(i, t))
    assert mgr.at_or_before(250).id == 2
    assert mgr.at_or_before(300).id == 3
    with pytest.raises(NotFoundError):
        mgr.at_or_before(99)
    with pytest.raises(NotFoundError):
        mgr.snapshot(9)
    (tmp_path / "snapshot" / "snapshot-3").write_text("{not json")
    with pytest.raises(CorruptMetadataError, match="snapshot-3"):
        mgr.snapshot(3)
