"""``lakectl maintain --metrics-file``: per-table health and maintenance in Prometheus text
format, for node_exporter's textfile collector.

The file is written through ``prometheus_client`` (its own registry, never the process-global
one) to a temporary file in the same directory and renamed over the target, so that the
collector never reads half a file. It keeps every table's series across runs: a run updates
the tables it saw and carries the others over from the file it replaces (unless they left
the warehouse), and a table it skipped or failed keeps its last health and last success time,
marked by ``lakectl_table_maintenance_status{status, reason}``, so the README's alert on
``time() - lakectl_table_last_maintenance_success_timestamp_seconds`` fires for it. A table's
branches have the same series with a ``branch`` label; main's have none (as before branches
were maintained).
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable, Iterable

from core.branch import MAIN_BRANCH
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


def render(reports: Iterable[TableReport], previous: bytes | None = None,
           keep: Callable[[str], bool] | None = None) -> bytes:
    """The Prometheus text exposition of the reports, and of ``previous`` (the file an earlier
    run wrote) for every table these reports do not cover that ``keep`` says still exists:
    a run over some tables leaves the others' series as they were. A table skipped or failed
    keeps its earlier health and last success time, marked with its status and reason.

    Main's series carry the label ``table`` alone, as before branches were maintained; each
    branch's series are the same metrics with ``branch="NAME"`` added (``{branch=""}`` selects
    main's). A branch's earlier series stay while a run does not reach the table's branches
    (the table skipped), and go once a run that did finds the branch deleted."""
    from prometheus_client import CollectorRegistry, generate_latest

    docs = {PREFIX + name: doc for name, doc, _ in _GAUGES}
    docs.update({PREFIX + name: doc for name, doc, _ in _RUN_GAUGES})
    series: dict[str, dict[tuple[tuple[str, str], ...], float]] = {name: {} for name in docs}

    def put(name: str, labels: dict[str, str], value: float) -> None:
        series[name][tuple(labels.items())] = value

    reports = list(reports)
    seen = {r.table: r for r in reports}
    for sample_name, labels, value in _samples(previous):
        table = labels.get("table")
        if sample_name not in series or table is None or (keep is not None and not keep(table)):
            continue
        r = seen.get(table)
        if r is not None and "branch" in labels:
            if r.branches is None:
                r = None  # this run did not reach the table's branches: theirs stay as they were
            else:
                r = next((b for b in r.branches if b.branch == labels["branch"]), None)
                if r is None:
                    continue  # the branch was deleted: its series go
        if r is None:
            put(sample_name, labels, value)
        elif sample_name in _CARRIED and not _reported_now(r, sample_name):
            put(sample_name, labels, value)  # the health and success of a run before this one
    for main in reports:
        for r in [main, *(main.branches or [])]:
            who = {"table": r.table} if r.branch == MAIN_BRANCH else {"table": r.table, "branch": r.branch}
            if r.health is not None:
                for name, _, value in _GAUGES:
                    v = value(r)
                    if v is not None:
                        put(PREFIX + name, who, v)
            if r.finished_at is not None:
                put(PREFIX + "last_maintenance_success_timestamp_seconds", who, r.finished_at)
            put(PREFIX + "maintenance_duration_seconds", who, r.duration_seconds)
            put(PREFIX + "maintenance_bytes_freed", who, r.bytes_freed)
            put(PREFIX + "maintenance_failed", who, 1 if r.status == "failed" else 0)
            put(PREFIX + "maintenance_skipped", who, 1 if r.status == "skipped" else 0)
            put(PREFIX + "maintenance_status", {**who, "status": r.status, "reason": (r.reason or "")[:200]}, 1)
    reg = CollectorRegistry()
    reg.register(_Families(docs, series))
    return generate_latest(reg)


class _Families:
    """A collector of gauge families whose series may differ in their label names (main's
    ``table``, a branch's ``table`` and ``branch``), which ``prometheus_client.Gauge`` cannot hold."""

    def __init__(self, docs: dict[str, str], series: dict[str, dict[tuple[tuple[str, str], ...], float]]) -> None:
        self.docs, self.series = docs, series

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        from prometheus_client.samples import Sample

        for name, doc in self.docs.items():
            family = GaugeMetricFamily(name, doc, labels=[])
            family.samples.extend(Sample(name, dict(labels), value, None)
                                  for labels, value in self.series[name].items())
            yield family


# Per run: (suffix, help, labels).
_RUN_GAUGES = (
    ("last_maintenance_success_timestamp_seconds", "When maintain last finished the table without error.", ["table"]),
    ("maintenance_duration_seconds", "Duration of the table's last maintenance run.", ["table"]),
    ("maintenance_bytes_freed", "Bytes the table's last maintenance run deleted.", ["table"]),
    ("maintenance_failed", "1 when the table's last maintenance run failed.", ["table"]),
    ("maintenance_skipped", "1 when the last run skipped the table (time budget, lease, policy).", ["table"]),
    ("maintenance_status", "The last run's status of the table (done, skipped, failed) and why.",
     ["table", "status", "reason"]),
)

# Series a table keeps from an earlier run when this run reports no new value for it.
_CARRIED = {PREFIX + name for name, _, _ in _GAUGES} | {PREFIX + "last_maintenance_success_timestamp_seconds"}


def last_success_times(path: str) -> dict[str, float]:
    """Each table's last successful maintenance (main's series: the table's run), from the
    metrics file an earlier run wrote (none when there is no file yet)."""
    try:
        with open(path, "rb") as f:
            previous = f.read()
    except FileNotFoundError:
        return {}
    name = PREFIX + "last_maintenance_success_timestamp_seconds"
    return {labels["table"]: value for sample, labels, value in _samples(previous)
            if sample == name and "table" in labels and "branch" not in labels}


def _reported_now(r: TableReport, sample_name: str) -> bool:
    if sample_name == PREFIX + "last_maintenance_success_timestamp_seconds":
        return r.finished_at is not None
    return r.health is not None


def _samples(previous: bytes | None) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample of an earlier metrics file; none when it cannot
    be parsed (a file some other program wrote is replaced, not merged)."""
    if not previous:
        return []
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return [(s.name, dict(s.labels), s.value) for family in text_string_to_metric_families(
            previous.decode("utf-8", "replace")) for s in family.samples]
    except ValueError:
        return []


def write_atomically(path: str, reports: Iterable[TableReport], keep: Callable[[str], bool] | None = None) -> None:
    """Write the metrics to ``path``: temp file in its directory, fsync, rename; the series of
    tables this run did not see are taken from the file there (those ``keep`` accepts)."""
    try:
        with open(path, "rb") as f:
            previous = f.read()
    except FileNotFoundError:
        previous = None
    data = render(reports, previous, keep)
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
