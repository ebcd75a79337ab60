"""Shell completion of names from the warehouse (tables, databases, snapshot ids, tags,
branches, consumers, a table's columns) and of Paimon's option keys.

When TAB is pressed the shell runs ``lakectl`` with ``_LAKECTL_COMPLETE=complete_bash`` (or
``_zsh``, ``_fish``) and the words typed so far; Typer parses them leniently and asks these
callbacks for candidates. The warehouse is the one the command would use: ``--warehouse`` of
the command or of ``lakectl``, else ``$LAKECTL_WAREHOUSE``, the profile, the config file.
Completion reads metadata only (directory listings, snapshot files) and never fails: any
error means no candidates, so a half-typed command line cannot print a traceback into the
shell. The scripts in ``completions/`` are generated from the app (``make completions``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from typing import Any, Callable

log = logging.getLogger(__name__)

MAX_CANDIDATES = 500  # a shell menu longer than this helps nobody

Candidates = list[tuple[str, str]]


def _quietly(fn: Callable[..., Candidates]) -> Callable[..., Candidates]:
    def wrapper(ctx: Any, incomplete: str) -> Candidates:
        try:
            return fn(ctx, incomplete)[:MAX_CANDIDATES]
        except Exception:  # noqa: BLE001 - completion must never break the shell (see module doc)
            log.debug("completion failed", exc_info=True)
            return []

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _settings(ctx: Any) -> Any:
    from lakectl.config import Settings

    root = ctx.find_root().params
    return Settings(warehouse=root.get("warehouse"), config_file=root.get("config"), profile=root.get("profile"),
                    catalog_options=list(root.get("catalog_option") or []))


def _names(ctx: Any) -> Any:
    """What lists the databases and tables: the catalog's registry, or on the filesystem
    catalog the warehouse's directories (without importing core.catalog)."""
    settings = _settings(ctx)
    flag = ctx.params.get("warehouse")
    catalog = settings.catalog(flag)
    if catalog is not None:
        return catalog
    from core.warehouse import Warehouse

    return Warehouse.open(settings.filesystem_warehouse(flag))


def _table(ctx: Any, *, on_branch: bool = True) -> Any:
    """The table named on the line; seen through its ``--branch`` when one was given earlier
    (snapshot ids, tags and consumers are the branch's own)."""
    # Completing an option's value, the lenient parse stops at that option before it assigns
    # the positional arguments: the table is then the first of the leftover words.
    name = ctx.params.get("table") or next(a for a in ctx.args if not a.startswith("-"))
    branch = ctx.params.get("branch") if on_branch else None
    return _settings(ctx).open_table(name, ctx.params.get("warehouse"),
                                     branch=branch if isinstance(branch, str) else None)


def _complete_table(ctx: Any, incomplete: str) -> Candidates:
    """``DB.TABLE`` names of the warehouse (of the catalog's registry)."""
    wh = _names(ctx)
    db_part, dot, _ = incomplete.partition(".")
    databases = [db_part] if dot else [d for d in wh.databases() if d.startswith(db_part)]
    out = []
    for db in databases:
        out += [(f"{db}.{t}", "table") for t in wh.tables(db) if f"{db}.{t}".startswith(incomplete)]
    return out


def _complete_database(ctx: Any, incomplete: str) -> Candidates:
    """Database names of the warehouse (of the catalog's registry)."""
    return [(db, "database") for db in _names(ctx).databases() if db.startswith(incomplete)]


# Snapshot ids completed with their kind and time; older matches get the id alone, so a table
# of thousands of snapshots costs a listing and this many small reads, not one read each.
DESCRIBED_SNAPSHOTS = 30


def _complete_snapshot_id(ctx: Any, incomplete: str) -> Candidates:
    """Snapshot ids of the table named earlier on the line, newest first; the newest ones with
    their commit kind and time."""
    snapshots = _table(ctx).snapshots
    ids = [sid for sid in reversed(snapshots.list_ids()) if str(sid).startswith(incomplete)]
    out = []
    for n, sid in enumerate(ids):
        if n < DESCRIBED_SNAPSHOTS:
            s = snapshots.snapshot(sid)
            when = dt.datetime.fromtimestamp(s.time_millis / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")
            out.append((str(sid), f"{s.commit_kind} {when}"))
        else:
            out.append((str(sid), "snapshot"))
    return out


def _complete_tag(ctx: Any, incomplete: str) -> Candidates:
    """Tag names of the table named earlier on the line."""
    return [(name, "tag") for name in _table(ctx).tags.names() if name.startswith(incomplete)]


def _complete_branch(ctx: Any, incomplete: str) -> Candidates:
    """Branch names of the table named earlier on the line, with their latest snapshot."""
    from core.ops.branches import list_branches

    return [(b.branch, f"latest snapshot {b.latest_snapshot_id}") for b in list_branches(_table(ctx, on_branch=False))
            if b.branch.startswith(incomplete)]


def _complete_consumer(ctx: Any, incomplete: str) -> Candidates:
    """Consumer ids of the table named earlier on the line, with their next snapshot."""
    from core.consumer import ConsumerManager

    t = _table(ctx)
    return [(c.consumer_id, f"next snapshot {c.next_snapshot}")
            for c in ConsumerManager(t.file_io, t.branch_path).consumers() if c.consumer_id.startswith(incomplete)]


def _complete_target(ctx: Any, incomplete: str) -> Candidates:
    """What ``maintain`` takes: databases and ``DB.TABLE`` names."""
    databases = [] if "." in incomplete else [
        (db, "database") for db in _names(ctx).databases() if db.startswith(incomplete)]
    return databases + _complete_table(ctx, incomplete)


def _columns(ctx: Any) -> list[str]:
    return [f.name for f in _table(ctx).schema.fields]


def _complete_column_list(ctx: Any, incomplete: str) -> Candidates:
    """``--select a,b,c``: the columns not yet listed, after what was typed."""
    done, _, last = incomplete.rpartition(",")
    listed = set(done.split(",")) if done else set()
    prefix = done + "," if done else ""
    return [(prefix + c, "column") for c in _columns(ctx) if c.startswith(last) and c not in listed]


# The identifier being typed at the end of a SQL condition ("dt = 'x' AND i" -> "i").
_LAST_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def _complete_where(ctx: Any, incomplete: str) -> Candidates:
    """``--where``: a column name for the identifier being typed (not inside a quoted string)."""
    if incomplete.count("'") % 2:
        return []
    match = _LAST_WORD.search(incomplete)
    last = match.group(0) if match else ""
    head = incomplete[:len(incomplete) - len(last)]
    return [(head + c, "column") for c in _columns(ctx) if c.startswith(last)]


def _complete_key(ctx: Any, incomplete: str) -> Candidates:
    """``lookup --key COL=VALUE,...``: the next primary-key column, as ``COL=``."""
    done, _, last = incomplete.rpartition(",")
    if "=" in last:
        return []
    named = {part.split("=", 1)[0] for part in done.split(",")} if done else set()
    prefix = done + "," if done else ""
    return [(f"{prefix}{k}=", "primary-key column") for k in _table(ctx).schema.primary_keys
            if k.startswith(last) and k not in named]


def _option_keys(with_value: bool) -> Callable[..., Candidates]:
    """Paimon's option keys: ``KEY=`` for ``--option``/``--set-option`` (the value is the
    user's), ``KEY`` for ``--reset-option``."""

    def complete(_ctx: Any, incomplete: str) -> Candidates:
        if with_value and "=" in incomplete:
            return []
        from core.option_catalog import CATALOG

        return [(k + ("=" if with_value else ""), kind) for k, (kind, _) in sorted(CATALOG.items())
                if "*" not in k and k.startswith(incomplete)]

    return complete


def _complete_scan_mode(_ctx: Any, incomplete: str) -> Candidates:
    """Paimon's scan modes for --follow."""
    from core.options import SCAN_MODES

    return [(m, "scan mode") for m in sorted(set(SCAN_MODES) - {"full"}) if m.startswith(incomplete)]


def _choices(description: str, values: Callable[[], tuple[str, ...]]) -> Callable[..., Candidates]:
    """Completion of an option whose value is one of a fixed set (never file names)."""

    def complete(_ctx: Any, incomplete: str) -> Candidates:
        return [(v, description) for v in values() if v.startswith(incomplete)]

    return _quietly(complete)


def _output_formats() -> tuple[str, ...]:
    from lakectl.config import FORMATS

    return FORMATS


def _engines() -> tuple[str, ...]:
    from core.engines import ENGINES

    return ENGINES


def _input_formats() -> tuple[str, ...]:
    from core.input_formats import FORMATS  # not core.sources, which loads pyarrow

    return FORMATS


complete_format = _choices("output format", _output_formats)
# scan's rows may also go to stdout as Parquet (lakectl.commands.scan)
complete_scan_format = _choices("output format", lambda: (*_output_formats(), "parquet"))
complete_engine = _choices("engine", _engines)
complete_input_format = _choices("input format", _input_formats)
complete_write_mode = _choices("write mode", lambda: ("append", "overwrite"))
complete_migrate_source = _choices("source kind", lambda: ("parquet", "orc", "iceberg"))
complete_order_strategy = _choices("order strategy", lambda: ("order", "zorder", "hilbert"))
# core.ops.changes.SCAN_MODES, spelled out: that module loads pyarrow, too slow for a <TAB>
complete_between_mode = _choices("incremental-between-scan-mode", lambda: ("auto", "delta", "changelog", "diff"))
complete_table = _quietly(_complete_table)
complete_database = _quietly(_complete_database)
complete_snapshot_id = _quietly(_complete_snapshot_id)
complete_tag = _quietly(_complete_tag)
complete_consumer = _quietly(_complete_consumer)
complete_branch = _quietly(_complete_branch)
complete_scan_mode = _quietly(_complete_scan_mode)
complete_target = _quietly(_complete_target)
complete_column_list = _quietly(_complete_column_list)
complete_where = _quietly(_complete_where)
complete_key = _quietly(_complete_key)
complete_option_pair = _quietly(_option_keys(with_value=True))
complete_option_key = _quietly(_option_keys(with_value=False))
