"""lakectl alter-schema DB.TABLE [--add-column SPEC [--first | --after COL]] [--drop-column COL]
[--rename-column OLD:NEW] [--alter-type COL:TYPE] [--set-nullable COL] [--set-not-null COL]
[--comment COL:TEXT] [--set-option K=V] [--reset-option K] [--dry-run]"""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from core.errors import UsageError
from core.evolution import (AddColumn, DropColumn, RemoveOption, RenameColumn, SchemaChange, SetOption,
                            UpdateColumnComment, UpdateColumnNullability, parse_add_column, parse_type_change,
                            split_pair)
from core.table import Table
from lakectl.completion import complete_option_key, complete_option_pair
from lakectl.commands import output, settings
from lakectl.output import Output
from lakectl.config import parse_pairs
from lakectl.params import BranchOpt, FormatOpt, TableArg, WarehouseOpt

if TYPE_CHECKING:
    from core.ops.alter import AlterResult

Many = Optional[list[str]]


def _added(specs: list[str], first: bool, after: str | None) -> list[AddColumn]:
    """--add-column specs; --first/--after place the single column they go with."""
    columns = [parse_add_column(s) for s in specs]
    if first and after is not None:
        raise UsageError("give --first or --after, not both")
    if first or after is not None:
        if len(columns) != 1:
            raise UsageError("--first/--after go with exactly one --add-column; with several, write the "
                             "position in each spec: --add-column \"c INT FIRST\" or \"c INT AFTER b\"")
        if columns[0].first or columns[0].after is not None:
            raise UsageError(f"column {columns[0].name!r} has a position in its spec and in --first/--after")
        columns = [dataclasses.replace(columns[0], first=first, after=after)]
    return columns


def changes_from_flags(*, add: list[str], first: bool, after: str | None, drop: list[str], rename: list[str],
                       alter_type: list[str], nullable: list[str], not_null: list[str], comment: list[str],
                       set_option: list[str], reset_option: list[str]) -> list[SchemaChange]:
    """The flags as one ordered list of changes (drops, renames, types, nullability, comments,
    adds, options), so each flag can name the columns as the flags before it left them."""
    changes: list[SchemaChange] = [DropColumn(c) for c in drop]
    for text in rename:
        old, new = split_pair(text, flag="--rename-column", shape="OLD:NEW")
        changes.append(RenameColumn(old, new))
    changes += [parse_type_change(t) for t in alter_type]
    changes += [UpdateColumnNullability(c, True) for c in nullable]
    changes += [UpdateColumnNullability(c, False) for c in not_null]
    for text in comment:
        column, note = split_pair(text, flag="--comment", shape="COLUMN:TEXT")
        changes.append(UpdateColumnComment(column, note or None))
    changes += _added(add, first, after)
    changes += [SetOption(k, v) for k, v in parse_pairs(set_option, flag="--set-option").items()]
    changes += [RemoveOption(k) for k in reset_option]
    return changes


def render(out: Output, result: AlterResult, branch: str) -> None:
    from core.ops.alter import ColumnPair

    if out.format != "table":
        out.record({"table": result.table, "branch": branch, **dataclasses.asdict(result)})
        return
    summary = {"table": result.table, "branch": branch,
               **{f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "columns"}}
    summary["changes"] = "\n".join(result.changes) or "(nothing to change)"
    out.record(summary, title=f"alter-schema {result.table}" + (" (dry run)" if result.dry_run else ""))
    if result.columns:
        out.records(list(result.columns), ColumnPair, title="columns: before -> after", data=False)


def register(app: typer.Typer) -> None:
    @app.command("alter-schema")
    def alter_schema_cmd(
        ctx: typer.Context,
        table: TableArg,
        add_column: Annotated[Many, typer.Option(
            "--add-column", help="Add a nullable column \"name TYPE [COMMENT 'text'] [FIRST | AFTER col]\" "
                                 "(repeatable). It reads as null in rows written before.", metavar='"NAME TYPE"',
            show_default=False)] = None,
        first: Annotated[bool, typer.Option("--first", help="Put the (single) added column first.")] = False,
        after: Annotated[Optional[str], typer.Option(
            "--after", metavar="COL", help="Put the (single) added column after this one.", show_default=False)] = None,
        drop_column: Annotated[Many, typer.Option(
            "--drop-column", help="Drop a column that is not a primary or partition key (repeatable).",
            metavar="COL", show_default=False)] = None,
        rename_column: Annotated[Many, typer.Option(
            "--rename-column", help="OLD:NEW; not a partition column. Options naming it follow (repeatable).",
            metavar="OLD:NEW", show_default=False)] = None,
        alter_type: Annotated[Many, typer.Option(
            "--alter-type", help="COL:TYPE, a lossless widening: TINYINT->SMALLINT->INT->BIGINT, an integer to "
                                 "a big enough DECIMAL, TINYINT/SMALLINT->FLOAT, up to INT->DOUBLE, FLOAT->DOUBLE, "
                                 "DECIMAL to more digits, longer (VAR)CHAR/(VAR)BINARY, more TIME/TIMESTAMP "
                                 "digits. Not for key or partition columns (repeatable).", metavar="COL:TYPE",
            show_default=False)] = None,
        set_nullable: Annotated[Many, typer.Option(
            "--set-nullable", help="Let a non-key column hold nulls (repeatable).", metavar="COL",
            show_default=False)] = None,
        set_not_null: Annotated[Many, typer.Option(
            "--set-not-null", help="Make a column NOT NULL; only when the table has no data or the stats of "
                                   "every file any snapshot or tag reads prove it null-free (repeatable).",
            metavar="COL", show_default=False)] = None,
        comment: Annotated[Many, typer.Option(
            "--comment", help="COL:TEXT sets a column comment; COL: removes it (repeatable).",
            metavar="COL:TEXT", show_default=False)] = None,
        set_option: Annotated[Many, typer.Option(
            "--set-option", help="Table option KEY=VALUE (repeatable). Immutable options (merge-engine, "
                                 "bucket-key, ...) and bucket cannot change once the table has data.",
            metavar="KEY=VALUE", show_default=False, autocompletion=complete_option_pair)] = None,
        reset_option: Annotated[Many, typer.Option(
            "--reset-option", help="Remove a table option, back to its default (repeatable).",
            metavar="KEY", show_default=False, autocompletion=complete_option_key)] = None,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the new schema beside the old one; "
                                                                "write nothing.")] = False,
        branch: BranchOpt = None,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Change a table's schema by writing a new schema version; data files are never rewritten.

        All changes of one call land together as one schema, or none does. They apply in this
        order, each seeing the names the ones before it left: drops, renames, type changes,
        nullability, comments, added columns, options. Files written before keep their own
        schema and are read by field id: dropped columns disappear, added ones read as null,
        renamed ones appear under the new name, widened ones are cast.

        Examples:

        \b
          lakectl alter-schema shop.orders --rename-column amount:total \\
              --add-column "note STRING AFTER total" --dry-run
          lakectl alter-schema shop.orders --alter-type "amount:DECIMAL(12, 2)" \\
              --set-option snapshot.num-retained.max=100
        """
        out = output(ctx, fmt)
        changes = changes_from_flags(
            add=add_column or [], first=first, after=after, drop=drop_column or [], rename=rename_column or [],
            alter_type=alter_type or [], nullable=set_nullable or [], not_null=set_not_null or [],
            comment=comment or [], set_option=set_option or [], reset_option=reset_option or [])
        t = settings(ctx).open_table(table, warehouse, branch=branch)
        result = t.alter(changes, dry_run=dry_run)
        # As at create: an option no Paimon version defines is kept, with a warning.
        from core.evolution import SetOption
        from core.option_catalog import unknown_option_warnings

        for line in unknown_option_warnings({c.key: c.value for c in changes if isinstance(c, SetOption)}):
            print(f"warning: {line}", file=sys.stderr)
        render(out, result, t.branch)
