"""The suite's columns (one per runner reported) and steps, as suite.py runs them and report.py
renders them: labels, the baseline each ratio is taken against, and a step's seconds in a run."""

from __future__ import annotations

from typing import Any

COLUMNS = ["floor", "lakectl_api", "lakectl_cli", "pypaimon", "deltalake", "spark_bare", "lakectl_spark"]
LABEL = {
    "floor": "floor (pyarrow)", "lakectl_api": "lakectl API", "lakectl_cli": "lakectl CLI",
    "pypaimon": "pypaimon 2.1.0", "deltalake": "deltalake", "spark_bare": "bare Spark",
    "lakectl_spark": "lakectl Spark",
}
BASELINE = {"floor": "floor", "lakectl_api": "floor", "lakectl_cli": "floor", "pypaimon": "floor",
            "deltalake": "floor", "spark_bare": "spark_bare", "lakectl_spark": "spark_bare"}
STEP_LABEL = {
    "create": "create", "write_base": "write base (N rows)", "upsert": "upsert (N/20 upd + N/40 ins)",
    "delete": "delete (N/40)", "upsert+delete": "upsert + delete", "read_latest": "read latest (merged)",
    "read_range": "read id range (~1% of keys)", "read_snapshot1": "read as of snapshot 1",
    "compact": "compact --full", "read_compacted": "read after compact --full",
}
NO_RATIO = {"create"}  # metadata only: the floor does nothing worth a ratio


def step_seconds(run: dict[str, Any] | None, step: str) -> float | None:
    if not run:
        return None
    steps = run["steps"]
    if step == "upsert+delete":
        a, b = step_seconds(run, "upsert"), step_seconds(run, "delete")
        return None if a is None or b is None else a + b
    s = steps.get(step) or {}
    return s.get("seconds")
