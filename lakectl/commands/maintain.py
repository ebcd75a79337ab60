"""lakectl maintain [DB | DB.TABLE ...]: one cron line keeps a whole warehouse healthy."""

from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_target
from lakectl.params import FormatOpt, WarehouseOpt


def parse_budget(text: str) -> float:
    """``30m``, ``2h``, ``90s`` (any Paimon duration) -> seconds. A bare number is seconds here:
    a budget in milliseconds (Paimon's reading of a bare number) would be no budget at all."""
    from core.options import parse_duration

    bare = text.strip()
    if bare.replace(".", "", 1).isdigit():
        return float(bare)
    return parse_duration(text, "--time-budget").total_seconds()


def table_names(catalog: Any, targets: list[str], open_table: Callable[[str], Any]) -> list[str]:
    """DB.TABLE names of the targets: every table of the catalog (a warehouse's directories or a
    catalog's registry), of a DB, or the table named. A table named that does not exist is
    NotFoundError (exit 3), as for every other command; one that goes away after this look is
    reported skipped."""
    if not targets:
        targets = catalog.databases()
    names: list[str] = []
    for t in targets:
        if "." in t:
            open_table(t)
            names.append(t)
        else:
            names.extend(f"{t}.{name}" for name in catalog.tables(t))
    return names


def report_rows(reports: list[Any]) -> list[Any]:
    """Each table's report followed by its branches' (main first, then the branches by name)."""
    return [x for r in reports for x in (r, *(r.branches or ()))]


def _iso(seconds: float | None) -> str | None:
    """Epoch seconds as the vocabulary's time: ISO 8601 with the local zone offset."""
    import datetime as dt

    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="milliseconds")


def report_row(r: Any) -> dict[str, Any]:
    """One report as JSON: actions and what each did, bytes freed, duration, why skipped, errors.
    Main and each branch of a table are reports of their own, named by ``branch``; a branch's
    lease times are its table's lease. An action's ``detail`` is what the command of its verb
    prints with --format json (its names and types; a dry run's orphan paths are the first few)."""
    from lakectl.output import result_json

    return {"table": r.table, "branch": r.branch, "status": r.status, "reason": r.reason,
            "actions": [{"verb": a.verb, "reason": a.reason, "done": a.done,
                         "detail": result_json(a.detail, a.verb) if a.detail else a.detail,
                         "bytes_freed": a.bytes_freed, "error": a.error} for a in r.actions],
            "bytes_freed": r.bytes_freed, "duration_seconds": round(r.duration_seconds, 3),
            "lease_taken_time": _iso(r.started_at), "lease_released_time": _iso(r.released_at)}


def _mark(action: dict[str, Any], dry_run: bool) -> str:
    if action["done"] or dry_run:
        return ""
    return " (not run)" if (action["error"] or "").startswith("not run") else " (failed)"


def register(app: typer.Typer) -> None:
    @app.command("maintain")
    def maintain_cmd(
        ctx: typer.Context,
        targets: Annotated[Optional[list[str]], typer.Argument(
            help="Databases (DB) or tables (DB.TABLE); default every table of the warehouse.",
            metavar="[DB | DB.TABLE]...", show_default=False, autocompletion=complete_target)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Print each table's plan; change nothing.")] = False,
        parallel: Annotated[int, typer.Option("--parallel", min=1, metavar="N", help="Maintain this many tables at once.")] = 1,
        time_budget: Annotated[Optional[str], typer.Option(
            "--time-budget", help="Start no new table after this long (30m, 2h); the rest are reported skipped. "
                                  "Tables start most overdue first: oldest last success (from --metrics-file), "
                                  "then oldest earliest snapshot.",
            metavar="DURATION")] = None,
        metrics_file: Annotated[Optional[str], typer.Option(
            "--metrics-file", help="Write per-table metrics in Prometheus text format to this file (atomically), "
                                   "for node_exporter's textfile collector.", metavar="PATH")] = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Maintain every table (or those named) as its own Paimon options ask: compaction,
        snapshot, partition, tag and consumer expiry, then orphan removal.

        Each branch of a table is maintained after main, under the table's lease, by the
        branch's own options (its snapshots, consumers, tags, compaction) and reported as its
        own entry (branch); orphan removal runs once per table, after every branch, since an
        orphan is a file no branch references.

        Each table's plan comes from its options (num-sorted-run.compaction-trigger,
        target-file-size, snapshot.*, partition.expiration-time, tag TTLs,
        consumer.expiration-time) and the [maintain] policy of the config file; its orphan-age
        has a 1h floor, lowered only by orphan-force = true (no writer runs meanwhile). A
        per-table lease keeps overlapping runs apart: a table another run holds is reported
        skipped, with the holder and its expiry; a run stopped past its lease leaves the table to
        the run that took it over ("lease lost to ..."). One table's failure does not stop the
        others; the exit code is 1 when any table (or branch) failed.

        Examples:

        \b
          lakectl maintain --dry-run
          lakectl maintain shop --parallel 4 --time-budget 30m
          lakectl maintain -f jsonl \\
              --metrics-file /var/lib/node_exporter/textfile/lakectl.prom \\
              >> /var/log/lakectl-maintain.log
        """
        from core.ops.maintain import maintain
        from lakectl.maintain_policy import Policies

        out = output(ctx, fmt)
        s = settings(ctx)
        catalog = s.any_catalog(warehouse)
        names = table_names(catalog, list(targets or []), lambda n: s.open_table(n, warehouse))
        budget = parse_budget(time_budget) if time_budget else None
        if budget is not None:
            from core.metrics import last_success_times
            from core.ops.maintain import overdue_first

            # Most overdue first, so that tight budgets reach every table within a few runs.
            history = last_success_times(metrics_file) if metrics_file else {}
            names = overdue_first(names, lambda n: s.locate_table(n, warehouse), history)
        policies = Policies(s.config.get("maintain"))
        with out.table_bars(len(names)) as bars:
            reports = maintain(names, lambda n: s.open_table(n, warehouse), policies, dry_run=dry_run,
                               engine_settings=s.engine_settings(), parallel=parallel, time_budget=budget,
                               on_done=None if bars is None else lambda rep: bars.finish(rep.table, rep.status),
                               on_step=None if bars is None else bars.step)
        if metrics_file and not dry_run:
            from core.metrics import write_atomically

            # Series of tables that left the warehouse go; the rest this run did not see stay.
            present = set(table_names(catalog, [], lambda n: s.open_table(n, warehouse)))
            write_atomically(metrics_file, reports, keep=present.__contains__)
        rows = [report_row(r) for r in report_rows(reports)]
        if out.format in ("json", "jsonl", "csv"):
            out.rows(rows, ["table", "branch", "status", "reason", "actions", "bytes_freed", "duration_seconds",
                            "lease_taken_time", "lease_released_time"], data=False)
        else:
            out.rows([{**r, "actions": ", ".join(a["verb"] + _mark(a, dry_run) for a in r["actions"])} for r in rows],
                     ["table", "branch", "status", "actions", "bytes_freed", "duration_seconds", "reason"],
                     title="maintenance" + (" plan" if dry_run else ""), data=False)
        failed = [r.table + ("" if r.branch == "main" else f" (branch {r.branch})")
                  for r in report_rows(reports) if r.status == "failed"]
        if failed:
            out.err.print(f"maintenance failed for: {', '.join(failed)}")
            raise typer.Exit(1)
