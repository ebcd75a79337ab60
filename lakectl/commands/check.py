"""lakectl check DB.TABLE [--deep | --repair [--dry-run]]: verify a table end to end; exit 1 when
anything is wrong. With --deep, decode the files' contents too (core.ops.check_deep). With
--repair, remove the snapshots and tags that cannot be read (core.ops.repair)."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from core.branch import MAIN_BRANCH
from core.errors import UsageError
from core.table import Table
from lakectl.commands import output, settings
from lakectl.output import Output
from lakectl.params import FormatOpt, TableArg, WarehouseOpt

if TYPE_CHECKING:
    from core.ops.repair import BranchRepair


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check_cmd(
        ctx: typer.Context,
        table: TableArg,
        repair: Annotated[bool, typer.Option(
            "--repair", help="Remove the snapshots and tags that cannot be read (and older snapshots a gap "
                             "would cut off) and rewrite stale hints; data files stay for remove-orphan-files.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="With --repair: show what would be removed; "
                                                                 "change nothing.")] = False,
        deep: Annotated[bool, typer.Option(
            "--deep", help="Also decode every data and changelog file that any snapshot, tag or branch lists "
                           "(each once: every row group, the row count against the manifest's, the schema's "
                           "columns) and every HASH index file: as costly as a full scan of every file the "
                           "history keeps.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Verify every schema (it parses; its key, partition and bucket-key columns exist; its
        field ids are unique; its options parse), snapshot, tag, manifest and referenced file
        (present, with its recorded size; deletion vectors decoded) and the LATEST/EARLIEST
        hints, of main and of every branch. Each finding names its branch. Changes nothing.
        Exit 0 when the table is sound, 1 when problems were found (each names its file; a
        one-line summary goes to stderr). A stale hint is a warning on stderr only: readers
        fall back to listing, the next commit rewrites it.

        With --deep: also read what the files hold, so that a file damaged in place at its
        recorded size is found. Every data and changelog file that a snapshot or tag of any
        branch lists is decoded once (Parquet: the footer's row count against the manifest's,
        every row group, page checksums where the writer stored them; ORC stripes; Avro
        blocks), and every HASH index file is decoded, with the latest snapshot's keys looked
        up in its bucket's index. This reads every such file whole (one row group at a time),
        as a full scan of every snapshot would, where the plain check only asks each file's
        size. --repair does not mend what --deep finds: it removes snapshot and tag files,
        which does not make a damaged data file whole (restore the file from a copy).

        With --repair: keep the longest run of readable snapshots ending at the newest readable
        one, remove the others (newer ones newest first, older ones oldest first) and the tags
        whose snapshot cannot be read, and rewrite stale hints. Only snapshot and tag files and
        hints are touched. Every branch is repaired the same way in its own snapshot/ and tag/.
        Exit 0 when the table is sound afterwards, 1 when problems remain or no snapshot of main
        at all can be read (then nothing is changed).

        Example:

        \b
          lakectl check shop.orders --format json
          lakectl check shop.orders --deep
          lakectl check shop.orders --repair --dry-run
        """
        if dry_run and not repair:
            raise UsageError("--dry-run goes with --repair (check alone never changes anything)")
        if deep and repair:
            raise UsageError("--deep goes without --repair: repair removes unreadable snapshot and tag files, "
                             "which does not mend a damaged data or index file that --deep finds (restore such a "
                             "file from a copy); run `check --deep` on its own")
        out = output(ctx, fmt)
        t = settings(ctx).open_table(table, warehouse)
        if repair:
            _repair(out, t, dry_run)
        else:
            _check(out, t, deep)


# Problems --repair leaves as they are, and what to do instead.
_NOT_REPAIRED = {
    "schema": "check --repair does not change schema files: correct the schema file named above",
    "contents": "check --repair does not mend a file whose contents are damaged: restore it from a copy of "
                "the table",
}


def _check(out: Output, t: Table, deep: bool) -> None:
    from core.ops.check import Problem, check

    from lakectl.output import result_json

    result = check(t, deep=deep)
    if out.format != "table":
        out.record(result_json(result, "check"))
    elif result.problems:
        plain = [_readable(p, t.path) for p in result.problems]
        out.records(plain, Problem, title=f"problems in {t.name} ({t.path})", data=False)
    else:
        summary = {k: v for k, v in result_json(result, "check").items() if k not in ("problems", "warnings")}
        out.record(summary, title=f"{t.name} is sound")
    for w in result.warnings:
        print(f"warning: {_on(w.branch)}{w.kind} {w.path} {w.detail}", file=sys.stderr)
    if result.problems:
        for note in _notes(result.problems, deep):
            print(f"note: {note}", file=sys.stderr)
        print(f"error: {len(result.problems)} problem(s) in {t.name}", file=sys.stderr)
        raise typer.Exit(1)


def _notes(problems: "list[Problem]", deep: bool) -> list[str]:
    """What the user should know about repairing these problems: the kinds --repair leaves."""
    kinds = {p.kind for p in problems}
    notes = [_NOT_REPAIRED["schema"]] if "schema" in kinds else []
    if deep and kinds & {"data-file", "changelog-file", "index-file"}:
        notes.append(_NOT_REPAIRED["contents"])
    if any(p.kind == "data-file" and p.detail == "is missing" for p in problems):
        notes.append("a missing data file makes every snapshot that lists it unreadable: remove-unexisting-files "
                     "drops it from the latest snapshot in one commit (its rows are lost, the older snapshots stay "
                     "unreadable until they expire); check --repair removes those snapshots instead")
    return notes


def _repair(out: Output, t: Table, dry_run: bool) -> None:
    from core.ops.repair import repair

    result = repair(t, dry_run=dry_run)
    if out.format != "table":
        out.record(result)
    else:
        # One line per removed snapshot, tag or remaining problem: readable in a field/value
        # table; the other branches' lines are prefixed with the branch.
        summary = dataclasses.asdict(result)
        summary["snapshots_removed"] = [f"{r.snapshot_id}: {r.reason}" for r in result.snapshots_removed]
        summary["tags_removed"] = [f"{r.tag}: {r.reason}" for r in result.tags_removed]
        summary["problems_left"] = [f"{p.kind} {p.path} {p.detail}" for p in result.problems_left]
        summary["branches"] = [_branch_line(b) for b in result.branches]
        verb = "would repair" if dry_run else "repaired"
        out.record(summary, title=f"{verb} {t.name}")
    left = len(result.problems_left) + sum(len(b.problems_left) for b in result.branches)
    if left:
        print(f"error: {left} problem(s) left in {t.name}", file=sys.stderr)
        raise typer.Exit(1)


def _readable(problem: "Problem", table_path: str) -> "Problem":
    """A problem for the plain table: its path relative to the table (the title names the
    table's path once) and a detail that does not repeat the path (an error's message often
    names its file)."""
    detail = problem.detail.replace(f" {problem.path}", "").replace(problem.path, "").strip()
    prefix = table_path.rstrip("/") + "/"
    path = problem.path[len(prefix):] if problem.path.startswith(prefix) else problem.path
    return dataclasses.replace(problem, path=path, detail=detail)


def _on(branch: str) -> str:
    return "" if branch == MAIN_BRANCH else f"branch {branch}: "


def _branch_line(b: "BranchRepair") -> str:
    """A branch's repair in one line: what went, the hints rewritten, what is left."""
    parts = [f"snapshots removed {[r.snapshot_id for r in b.snapshots_removed]}" if b.snapshots_removed else "",
             f"tags removed {[r.tag for r in b.tags_removed]}" if b.tags_removed else "",
             f"hints rewritten {b.hints_rewritten}" if b.hints_rewritten else "",
             "; ".join(f"{p.kind} {p.path} {p.detail}" for p in b.problems_left)]
    return f"{b.branch}: " + (", ".join(p for p in parts if p) or "sound")
