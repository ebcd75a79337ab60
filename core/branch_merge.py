"""``branch-merge.enabled``: the table option that keeps a table's history pure append, so that
``branch merge`` can tell by file which data of one branch the other lacks.

Paimon 2.0's ``merge_branch`` (apache/paimon PR #7882, ``FileSystemBranchManager.mergeBranch``)
adds to the target branch the source's live data files the target does not list, identified as
a manifest entry is (partition, bucket, level, file name, extra files, embedded index, external
path). That is only right while no file of either branch was rewritten or removed: a compacted
file has a new name, so its rows would be merged a second time. Paimon's documentation of the
procedure names this option as the guard (create-only, rejecting compaction and INSERT
OVERWRITE, not with deletion vectors); its code (2.0 and later) checks instead, at merge time,
that both branches still hold every snapshot from 1 and that each is APPEND or ANALYZE.
lakectl does both: the option refuses here, before any work, every command that would rewrite
or remove data files (``refuse``), and a commit of such a table that is not a plain APPEND of
new files is refused in ``core.commit`` as a backstop; ``core.ops.merge_branch`` checks the
history as Paimon's merge does.

Where Paimon's code is silent (it never reads the option) lakectl refuses what would break the
file-level diff: delete, truncate, drop-partition, expire-partitions, rescale, remove-unexisting-files,
compact-manifests (a COMPACT snapshot, which Paimon's merge refuses) and rollback --as-latest.
Snapshot expiry is allowed, as in Paimon, and then makes merge refuse (the history no longer
starts at snapshot 1).
"""

from __future__ import annotations

from typing import Mapping

from core.errors import UnsupportedTableError, UsageError

OPTION = "branch-merge.enabled"


def enabled_in(options: Mapping[str, str]) -> bool:
    """Whether ``options`` set ``branch-merge.enabled`` to true."""
    value = options.get(OPTION, "false")
    return isinstance(value, str) and value.strip().lower() == "true"


def enabled(schema: object) -> bool:
    """Whether the table (a TableSchema) keeps a pure-append history for branch merge."""
    return enabled_in(getattr(schema, "options", {}))


def validate_create(options: Mapping[str, str], *, has_primary_key: bool) -> None:
    """Refuse combinations Paimon's merge cannot serve, when a table is created.

    Raises:
        UsageError: the option on a primary-key table, with deletion vectors, or on a
            data-evolution table (Paimon's merge refuses all three).
    """
    if not enabled_in(options):
        return
    if has_primary_key:
        raise UsageError(f"option {OPTION}=true is for append tables only (Paimon merges branches of append "
                         "tables); this table has a primary key")
    for key in ("deletion-vectors.enabled", "data-evolution.enabled"):
        if str(options.get(key, "false")).strip().lower() == "true":
            raise UsageError(f"option {OPTION}=true cannot be combined with {key}=true (Paimon: branch merge "
                             "compares files, which these tables change without rewriting them)")


def refuse(schema: object, table_name: str, action: str) -> None:
    """Refuse ``action`` (a command that would rewrite or remove data files) on a table with
    ``branch-merge.enabled=true``, in one line naming the option.

    Raises:
        UnsupportedTableError: the table keeps a pure-append history for branch merge.
    """
    if enabled(schema):
        raise UnsupportedTableError(refusal(table_name, action))


def refusal(table_name: str, action: str) -> str:
    """The one-line reason ``action`` is refused (also maintain's reason for skipping it)."""
    return (f"{action} refused: table {table_name} uses {OPTION}=true, which keeps its history pure append "
            "so that branch merge can compare branches file by file (Paimon rejects compaction and overwrite "
            "on such tables)")
