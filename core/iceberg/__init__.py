"""Iceberg metadata kept beside a Paimon table (``metadata.iceberg.storage``), as Paimon does.

Iceberg readers (pyiceberg, DuckDB, Trino, Spark) read a table through an Iceberg metadata
file that lists the table's Parquet data files; Paimon writes one after each commit of a table
that asks for it (docs/iceberg.md has the facts this module follows). lakectl writes, for each
commit of main, ``v<snapshot id>.metadata.json`` holding one Iceberg snapshot per live Paimon
snapshot (id = Paimon's, each with its own schema), the tags as refs, and ``version-hint.text``
naming it (format 2 or 3; format 3 also carries row ids, and per snapshot whose deletion
vectors changed a Puffin file of those vectors and a delete manifest: deletion_vectors.py). A
commit extends the current version: a manifest of its added files, the manifests holding files
it removed rewritten, the rest reused (history.py); a version that cannot be
extended is rebuilt from the Paimon snapshots. Expire and tag changes rewrite the latest
version in place; versions beyond ``metadata.iceberg.previous-versions-max`` are deleted, and
the manifests, lists and Puffin files no kept version names (sync.py).

The metadata is derived: it is written after the Paimon snapshot is published and never
changes the commit's outcome (``sync_after_commit`` logs a warning on failure). The next
commit, or ``lakectl iceberg-sync``, writes it again from the latest snapshot.
"""

from core.iceberg.metadata import iceberg_location, metadata_dir
from core.iceberg.options import (COMPATIBLE, DELETE_AFTER_COMMIT, FORMAT_VERSION, MANIFEST_COMPRESSION,
                                  PREVIOUS_VERSIONS_MAX, STORAGE, enabled, manifest_compression, option_refusal,
                                  refusal, storage)
from core.iceberg.sync import (IcebergSyncResult, after_change, after_drop, after_move, sync, sync_after_commit,
                               visible_entries)

__all__ = ["COMPATIBLE", "DELETE_AFTER_COMMIT", "FORMAT_VERSION", "IcebergSyncResult", "MANIFEST_COMPRESSION",
           "PREVIOUS_VERSIONS_MAX", "STORAGE", "after_change", "after_drop", "after_move", "enabled",
           "iceberg_location", "manifest_compression", "metadata_dir", "option_refusal", "refusal", "storage", "sync",
           "sync_after_commit", "visible_entries"]
