"""The suite's columns (one per runner reported) and steps, as suite.py runs them and report.py
renders them: labels, the baseline each ratio is taken against, and a step's seconds in a run."""

from __future__ import annotations

from typing import Any

COLUMNS = ["floor", "lakectl_api", "lakectl_cli", "pypaimon", "pypaimon_rust", "deltalake", "spark_bare",
           "lakectl_spark"]
LABEL = {
    "floor": "floor (pyarrow)", "lakectl_api": "lakectl API", "lakectl_cli": "lakectl CLI",
    "pypaimon": "pypaimon 2.1.0", "pypaimon_rust": "pypaimon-rust 0.4.0", "deltalake": "deltalake",
    "spark_bare": "bare Spark",
    "lakectl_spark": "lakectl Spark",
}
BASELINE = {"floor": "floor", "lakectl_api": "floor", "lakectl_cli": "floor", "pypaimon": "floor",
            "pypaimon_rust": "floor", "deltalake": "floor", "spark_bare": "spark_bare", "lakectl_spark": "spark_bare"}
STEP_LABEL = {
    "create": "create", "write_base": "write base (N rows)", "upsert": "upsert (N/20 upd + N/40 ins)",
    "delete": "delete (N/40)", "upsert+delete": "upsert + delete", "read_latest": "read latest (merged)",
    "read_range": "read id range (~1% of keys)", "read_snapshot1": "read as of snapshot 1",
    "compact": "compact --full", "read_compacted": "read after compact --full",
}
NO_RATIO = {"create"}  # metadata only: the floor does nothing worth a ratio


def step_seconds(run: dict[str, Any] | None, step: str, field: str = "seconds") -> float | None:
    """A step's wall seconds in one run (``field="cpu"``: its CPU seconds, where recorded)."""
    if not run:
        return None
    steps = run["steps"]
    if step == "upsert+delete":
        a, b = step_seconds(run, "upsert", field), step_seconds(run, "delete", field)
        return None if a is None or b is None else a + b
    s = steps.get(step) or {}
    return s.get(field)
