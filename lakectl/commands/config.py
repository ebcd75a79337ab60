"""lakectl config show: every effective setting, its value (secrets masked) and where it came from."""

from __future__ import annotations

import typer

from typing import Annotated

from lakectl.commands import output, settings
from lakectl.params import FormatOpt, WarehouseOpt


def register(app: typer.Typer) -> None:
    config_app = typer.Typer(help="Show the settings lakectl runs with.\n\nExample:\n\n\b\n  lakectl config show",
                             no_args_is_help=True)

    @config_app.command("show")
    def show_cmd(ctx: typer.Context, fmt: FormatOpt = None,
                 policy: Annotated[bool, typer.Option(
                     "--policy", help="Show instead the maintain policy in effect for each table of the "
                                      "warehouse (the [maintain] section and the patterns that match).")] = False,
                 warehouse: WarehouseOpt = None) -> None:
        """Show each setting (warehouse, format, engine, Spark, S3, the catalog), its effective
        value and its source: a flag, a LAKECTL_* variable, the selected profile, the config
        file, or the default. Precedence: flag > environment > profile > config file > default.
        S3 credentials and catalog secrets (jdbc.password, token, ...) show as ****.

        Examples:

        \b
          lakectl config show
          lakectl --profile prod config show --format json
          lakectl config show --policy
        """
        out = output(ctx, fmt)
        if policy:
            from lakectl.commands.maintain import table_names
            from lakectl.maintain_policy import Policies

            s = settings(ctx)
            policies = Policies(s.config.get("maintain"))
            names = table_names(s.any_catalog(warehouse), [], lambda n: s.open_table(n, warehouse))
            out.rows([policies.describe(n) for n in names], title="maintain policy")
            return
        out.rows(settings(ctx).shown(warehouse), ["key", "value", "source"], title="settings")

    app.add_typer(config_app, name="config")
