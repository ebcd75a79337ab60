"""``lakectl maintain --metrics-file``: per-table health and maintenance in Prometheus text
format, for node_exporter's textfile collector.

The file is written through ``prometheus_client`` (its own registry, never the process-global
one) to a temporary file in the same directory and renamed over the target, so that the
collector never reads half a file.
"""

from __future__ import annotations

import os
import tempfile
from typing import Iterable

from core.ops.maintain import TableReport

PREFIX = "lakectl_table_"

# (metric suffix, help, value from a report); None values are left out.
_GAUGES = (
    ("snapshots", "Retained snapshots.", lambda r: r.health.snapshots),
    ("files", "Live data files.", lambda r: r.health.files),
    ("small_files", "Live data files under half of target-file-size.", lambda r: r.health.small_files),
    ("bytes", "Bytes of the live data files.", lambda r: r.health.bytes),
    ("manifests", "Manifests the latest snapshot lists (base and delta).", lambda r: r.health.manifests),
    ("max_sorted_runs", "Most sorted runs in one bucket.", lambda r: r.health.max_sorted_runs),
    ("deletion_vector_ratio", "Fraction of live data files with a deletion vector.",
     lambda r: r.health.deletion_vector_ratio),
    ("oldest_snapshot_age_seconds", "Age of the earliest retained snapshot.",
     lambda r: r.health.oldest_snapshot_age_seconds),
)


def render(reports: Iterable[TableReport]) -> bytes:
    """The Prometheus text exposition of the reports."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    reg = CollectorRegistry()
    labels = ["table"]
    gauges = {name: Gauge(PREFIX + name, doc, labels, registry=reg) for name, doc, _ in _GAUGES}
    last_ok = Gauge(PREFIX + "last_maintenance_success_timestamp_seconds",
                    "When maintain last finished the table without error.", labels, registry=reg)
    duration = Gauge(PREFIX + "maintenance_duration_seconds", "Duration of the table's maintenance.", labels,
                     registry=reg)
    freed = Gauge(PREFIX + "maintenance_bytes_freed", "Bytes the maintenance deleted.", labels, registry=reg)
    failed = Gauge(PREFIX + "maintenance_failed", "1 when the table's maintenance failed.", labels, registry=reg)
    for r in reports:
        if r.health is not None:
            for name, _, value in _GAUGES:
                v = value(r)
                if v is not None:
                    gauges[name].labels(r.table).set(v)
        if r.finished_at is not None:
            last_ok.labels(r.table).set(r.finished_at)
        duration.labels(r.table).set(r.duration_seconds)
        freed.labels(r.table).set(r.bytes_freed)
        failed.labels(r.table).set(1 if r.status == "failed" else 0)
    return generate_latest(reg)


def write_atomically(path: str, reports: Iterable[TableReport]) -> None:
    """Write the metrics to ``path``: temp file in its directory, fsync, rename."""
    data = render(reports)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".lakectl-metrics-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # node_exporter usually runs as another user
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
