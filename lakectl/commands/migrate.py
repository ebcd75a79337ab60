"""lakectl migrate SOURCE DB.TABLE [--from parquet|orc|iceberg] [--in-place] [--dry-run]"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from lakectl.commands import output, settings
from lakectl.completion import complete_migrate_source
from lakectl.params import FormatOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    @app.command("migrate")
    def migrate_cmd(
        ctx: typer.Context,
        source: Annotated[str, typer.Argument(help="A directory of Parquet or ORC files, flat or Hive-partitioned "
                                                   "(dt=2024-01-01/...), or an Iceberg table: its metadata file, "
                                                   "its directory, or URI#NAMESPACE.TABLE of a pyiceberg SQL "
                                                   "catalog (jdbc:sqlite:/path/catalog.db#ns.events).",
                                              metavar="SOURCE", show_default=False)],
        table: Annotated[str, typer.Argument(help="The new table: DB.TABLE, or a path/URI.", metavar="DB.TABLE",
                                             show_default=False)],
        from_format: Annotated[Optional[str], typer.Option(
            "--from", metavar="PARQUET|ORC|ICEBERG", help="The files' format, or iceberg (default: detected: an "
                                                          "Iceberg table by its metadata; mixed formats are "
                                                          "refused).", show_default=False,
            autocompletion=complete_migrate_source)] = None,
        in_place: Annotated[bool, typer.Option(
            "--in-place", help="Move the files into the table (the source directories are removed once "
                               "empty) instead of copying them.")] = False,
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be created and which files "
                                                                "would be copied or moved; write nothing.")] = False,
        warehouse: WarehouseOpt = None,
        fmt: FormatOpt = None,
    ) -> None:
        """Migrate a directory of Parquet or ORC files, or an Iceberg table, into a new Paimon append table.

        The files are not rewritten: each is copied (or with --in-place moved) into the table's
        layout and listed, with its row count and column stats read from the file, in one APPEND
        snapshot. The table has the files' columns (every file must have the same schema), then
        one STRING partition column per Hive directory level (KEY=VALUE), bucket -1 and the
        files' file.format. It must not exist. Files and directories whose names start with .
        or _ are skipped. A migration that is interrupted (killed) leaves a journal in the
        table's directory: running the same command again finishes it.

        From an Iceberg table (as Paimon's migrate_iceberg_table): the Parquet data files of
        its current snapshot, with the Iceberg field ids and types, identity partitions as
        partition columns, and position deletes or deletion vectors as Paimon deletion
        vectors (deletion-vectors.enabled). Equality deletes and other partition transforms
        are refused. SOURCE is a metadata file (metadata/v3.metadata.json), a table directory
        (version-hint.text, else the newest metadata file), or a pyiceberg SQL catalog's
        URI#[CATALOG/]NAMESPACE.TABLE: jdbc:sqlite:/path/catalog.db, sqlite:////path/catalog.db
        or jdbc:postgresql://host/db. --in-place moves the data files; the Iceberg metadata
        stays and no longer reads.

        Examples:

        \b
          lakectl migrate landing/events shop.events_raw --dry-run -f json
          lakectl migrate landing/events shop.events_raw
          lakectl migrate landing/clicks shop.clicks --in-place
          lakectl migrate jdbc:sqlite:/data/iceberg.db#web.visits shop.visits
        """
        from core.ops.migrate import migrate

        out = output(ctx, fmt)
        target = settings(ctx).locate_table(table, warehouse)
        with out.progress() as progress:
            result = migrate(source, target, file_format=from_format, in_place=in_place, dry_run=dry_run,
                             progress=progress)
        for line in result.warnings:
            print(f"warning: {line}", file=sys.stderr)
        out.record(result, title=f"migrate {source}")
