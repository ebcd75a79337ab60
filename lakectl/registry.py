"""The subcommands by name: where each lives and its one-line help.

The root app imports a command's module only when that command runs (or its help is shown),
so ``lakectl snapshots`` never pays for the imports of ``write`` or ``scan``. ``lakectl
--help`` lists every command from this table without importing any of them; the summaries
must equal the first paragraph of each command's own help (tests/cli/test_invocation.py
checks it), so that the listing reads as it did when every module was imported.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    name: str     # as typed: lakectl NAME
    module: str   # lakectl.commands.<module>, whose register(app) declares it
    summary: str  # the first paragraph of its help


COMMANDS: tuple[Entry, ...] = (
    Entry("create", "create", "Create a table (and its database)."),
    Entry("write", "write", "Write rows from a file as one snapshot, or stream records from stdin as a snapshot "
                            "per batch."),
    Entry("scan", "scan", "Read the table (merge-on-read) at the latest or an earlier snapshot."),
    Entry("lookup", "lookup", "Point lookups by primary key, reading only the files whose key range can hold a key."),
    Entry("compact", "compact", "Compact data files: merge each bucket's files, commit a COMPACT snapshot."),
    Entry("compact-manifests", "compact_manifests",
          "Rewrite the latest snapshot's manifests into as few as manifest.target-file-size allows, as one COMPACT "
          "snapshot that changes no data."),
    Entry("iceberg-sync", "iceberg_sync",
          "Write the table's Iceberg metadata anew from its latest snapshot (tables with metadata.iceberg.storage)."),
    Entry("delete", "delete", "Delete the rows a --where filter matches, as one snapshot."),
    Entry("expire", "expire", "Expire old snapshots and delete the files only they reference (tags are kept)."),
    Entry("expire-changelogs", "expire_changelogs",
          "Expire the changelogs kept past their snapshots (changelog/) and the files only they use."),
    Entry("expire-partitions", "expire_partitions",
          "Drop partitions whose time has expired, as one OVERWRITE snapshot; data files go when that "
          "snapshot's predecessors expire."),
    Entry("truncate", "truncate",
          "Delete every row as one OVERWRITE snapshot; data files go when that snapshot's predecessors expire."),
    Entry("rescale", "rescale",
          "Change a fixed-bucket table's bucket count by rewriting its rows into the new buckets, as one OVERWRITE "
          "snapshot (Paimon's rescale)."),
    Entry("drop-partition", "truncate",
          "Drop partitions as one OVERWRITE snapshot; data files go when that snapshot's predecessors expire."),
    Entry("mark-partition-done", "partition_done",
          "Mark partitions done for downstream schedulers, as Paimon's mark_partition_done: a _SUCCESS file in "
          "each."),
    Entry("snapshots", "snapshots",
          "List snapshots: id, schema id, commit kind, commit time, delta and total record counts (and "
          "commit_time_millis and commit_user in the json, jsonl and csv formats)."),
    Entry("rollback", "rollback",
          "Make an earlier snapshot the latest: removes newer snapshots and the tags on them."),
    Entry("clone", "clone",
          "Copy a table as of one snapshot (default the latest) into a new, independent table with one snapshot."),
    Entry("remove-orphan-files", "orphans",
          "Delete files under the table that no snapshot or tag references (failed writes, rollbacks)."),
    Entry("remove-unexisting-files", "missing_files",
          "Remove the latest snapshot's entries of data files that no longer exist, as one APPEND snapshot."),
    Entry("files", "files",
          "List live data files: partition, bucket, level, rows, size, sequence range, schema, name, and the rows "
          "each file's deletion vector deletes (tables with deletion-vectors.enabled)."),
    Entry("partitions", "table_views",
          "List partitions with their record count, file size, file count and last update time (as Paimon's "
          "$partitions)."),
    Entry("buckets", "table_views",
          "List buckets per partition with their record count, file size, file count and last update time (as "
          "Paimon's $buckets)."),
    Entry("manifests", "table_views",
          "List the manifest files of a snapshot's base and delta lists: name, size, files added and deleted, "
          "schema id (as Paimon's $manifests)."),
    Entry("describe", "describe",
          "Show a table's schema (with field ids), keys, partitioning, buckets, options and size."),
    Entry("list", "listing", "List databases, or the tables of DATABASE."),
    Entry("drop", "drop", "Drop a table: delete its directory and every file in it (no time travel afterwards)."),
    Entry("drop-database", "drop",
          "Drop a database (its DATABASE.db directory); refuses while it holds tables unless --cascade."),
    Entry("migrate", "migrate",
          "Migrate a directory of Parquet or ORC files, or an Iceberg table, into a new Paimon append table."),
    Entry("rename", "rename",
          "Rename a table: one atomic rename on local disk; on object stores, copy then delete."),
    Entry("alter-schema", "alter_schema",
          "Change a table's schema by writing a new schema version; data files are never rewritten."),
    Entry("schemas", "schemas",
          "List schema versions: id, time, column count and what each changed (columns paired by field id)."),
    Entry("check", "check",
          "Verify every schema (it parses; its key, partition and bucket-key columns exist; its field ids are "
          "unique; its options parse), snapshot, tag, manifest and referenced file (present, with its recorded "
          "size; deletion vectors decoded) and the LATEST/EARLIEST hints, of main and of every branch."),
    Entry("tag", "tags", "Create, rename, delete and list tags: named snapshots that expire leaves alone."),
    Entry("expire-tags", "expire_tags",
          "Delete tags whose TTL (their own, from tag create --time-retained, else the table option "
          "tag.default-time-retained) has passed, or created before --older-than."),
    Entry("branch", "branches",
          "Create, delete, list, merge and fast-forward branches: snapshot histories of their own that share the table's "
          "data files."),
    Entry("consumer", "consumers",
          "List, move and delete consumers: the positions of streaming readers (scan --follow --consumer-id), which "
          "hold back expiration."),
    Entry("maintain", "maintain",
          "Maintain every table (or those named) as its own Paimon options ask: compaction, snapshot, partition, tag "
          "and consumer expiry, then orphan removal."),
    Entry("health", "health",
          "Show a table's health (snapshots, files, small files, sorted runs, deletion vectors, oldest snapshot) and "
          "what to do about it, each recommendation naming its command."),
    Entry("config", "config", "Show the settings lakectl runs with."),
)

BY_NAME = {e.name: e for e in COMMANDS}
