"""Benchmark: expiring snapshots costs what is expired, not the length of the history.

Builds a table with a long synthetic history quickly (each snapshot replaces one bucket's
file, as a compaction would; manifests merged every 30 commits, as Java's writer does with
``manifest.merge-min-count``), then times expiring 10 snapshots and 1,000 snapshots out of
it, and 10 out of a history ten times shorter. Prints a Markdown table and the ratio of
per-snapshot costs (1,000 vs 10) and of the 10-snapshot cost at both history lengths.

    python bench/expire.py [--snapshots 5000] [--out bench/results-expire.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import binary_row  # noqa: E402
from core.manifest import ADD, DELETE, DataFileMeta, ManifestEntry  # noqa: E402
from core.ops.create import create  # noqa: E402
from core.ops.expire import expire_snapshots  # noqa: E402
from core.snapshot import APPEND, COMPACT, Snapshot  # noqa: E402
from core.stats import EMPTY_STATS  # noqa: E402
from core.table import Table  # noqa: E402

BUCKETS = 4
MERGE_EVERY = 30


def _file(seq: int) -> DataFileMeta:
    key = binary_row.EMPTY_ROW  # never read: expire looks only at names, sizes and identities
    return DataFileMeta(file_name=f"data-{uuid.uuid4()}-0.parquet", file_size=1, row_count=1, min_key=key,
                        max_key=key, key_stats=EMPTY_STATS, value_stats=EMPTY_STATS, min_sequence_number=seq,
                        max_sequence_number=seq, schema_id=0, level=0, creation_time=int(time.time() * 1000),
                        delete_row_count=0, file_source=0, value_stats_cols=())


def build(warehouse: str, n: int) -> Table:
    """``n`` snapshots written directly (valid manifests, lists and snapshot files, tiny data files)."""
    t = Table.locate("db.bench", warehouse=warehouse)
    create(t, "id BIGINT NOT NULL, v STRING", primary_keys=["id"], options={"bucket": str(BUCKETS)})
    mio = t.manifests()
    sm = t.snapshots
    live: dict[int, ManifestEntry] = {}
    merged: list = []   # ManifestFileMeta of the last merged manifest
    deltas: list = []   # delta manifests since that merge
    old_ms = int(time.time() * 1000) - 86_400_000  # a day ago: every snapshot is old enough
    for sid in range(1, n + 1):
        bucket = sid % BUCKETS
        new = ManifestEntry(ADD, binary_row.EMPTY_ROW, bucket, BUCKETS, _file(sid))
        entries = [new]
        if bucket in live:
            entries.insert(0, ManifestEntry(DELETE, live[bucket].partition, bucket, BUCKETS, live[bucket].file))
        bucket_dir = os.path.join(t.path, f"bucket-{bucket}")
        os.makedirs(bucket_dir, exist_ok=True)
        with open(os.path.join(bucket_dir, new.file.file_name), "wb") as f:
            f.write(b"x")
        if len(deltas) >= MERGE_EVERY:  # Java-style manifest merge into the base list
            merged = [mio.write_manifest(list(live.values()), 0, [])]
            deltas = []
        base = mio.write_manifest_list(merged + deltas)
        delta_meta = mio.write_manifest(entries, 0, [])
        delta = mio.write_manifest_list([delta_meta])
        deltas.append(delta_meta)
        live[bucket] = new
        snap = Snapshot(id=sid, schema_id=0, base_manifest_list=base[0], base_manifest_list_size=base[1],
                        delta_manifest_list=delta[0], delta_manifest_list_size=delta[1],
                        commit_user="bench", commit_identifier=sid,
                        commit_kind=COMPACT if len(entries) > 1 else APPEND, time_millis=old_ms + sid,
                        total_record_count=len(live), delta_record_count=len(entries) - 1)
        assert sm.try_publish(snap)
    sm.write_latest_hint(n)
    sm.write_earliest_hint(1)
    return t


def timed_expire(t: Table, count: int) -> tuple[float, int]:
    start = time.perf_counter()
    r = expire_snapshots(t, retain_min=1, older_than="0s", max_deletes=count, dry_run=False)
    elapsed = time.perf_counter() - start
    assert len(r.snapshots_expired) == count, r
    return elapsed, r.data_files_deleted + r.manifest_files_deleted + count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshots", type=int, default=5000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    n = args.snapshots
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        long_t = build(os.path.join(tmp, "long"), n)
        build_s = time.perf_counter() - start
        short_t = build(os.path.join(tmp, "short"), n // 10)
        s10_short, _ = timed_expire(short_t, 10)
        s10, d10 = timed_expire(long_t, 10)
        s1000, d1000 = timed_expire(long_t, 1000)
    per10, per1000 = s10 / 10, s1000 / 1000
    lines = [
        f"# expire benchmark ({n} snapshots of history, built in {build_s:.1f} s)",
        "",
        "| case | snapshots expired | files deleted | seconds | ms per snapshot |",
        "|---|---:|---:|---:|---:|",
        f"| 10 of {n // 10} | 10 | - | {s10_short:.3f} | {s10_short / 10 * 1000:.2f} |",
        f"| 10 of {n} | 10 | {d10} | {s10:.3f} | {per10 * 1000:.2f} |",
        f"| 1000 of {n - 10} | 1000 | {d1000} | {s1000:.3f} | {per1000 * 1000:.2f} |",
        "",
        f"per-snapshot cost, 1000 expired / 10 expired: {per1000 / per10:.2f}x (1.0 = linear in what is expired)",
        f"10 expired, history {n} / history {n // 10}: {s10 / s10_short:.2f}x (1.0 = independent of history)",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
