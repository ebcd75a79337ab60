"""Iceberg metadata kept beside a Paimon table (``metadata.iceberg.storage``), as Paimon does.

Iceberg readers (pyiceberg, DuckDB, Trino, Spark) read a table through an Iceberg metadata
file that lists the table's Parquet data files; Paimon writes one after each commit of a table
that asks for it (docs/iceberg.md has the facts this module follows). lakectl writes, for the
latest snapshot, a self-contained set: one manifest of the snapshot's visible files, one
manifest list, and ``v<snapshot id>.metadata.json`` holding the current schema, an identity
partition spec and that one snapshot (Iceberg snapshot id = Paimon snapshot id), then
``version-hint.text``; in format 3 (``metadata.iceberg.format-version``) with deletion vectors
also a Puffin file of the visible files' vectors and a delete manifest pointing into it
(core/iceberg/deletion_vectors.py). Nothing is reused from earlier versions; older versions beyond
``metadata.iceberg.previous-versions-max`` are deleted with the manifests only they name.

The metadata is derived: it is written after the Paimon snapshot is published and never
changes the commit's outcome (``sync_after_commit`` logs a warning on failure). The next
commit, or ``lakectl iceberg-sync``, writes it again from the latest snapshot.
"""

from core.iceberg.metadata import iceberg_location, metadata_dir
from core.iceberg.options import (COMPATIBLE, DELETE_AFTER_COMMIT, FORMAT_VERSION, MANIFEST_COMPRESSION,
                                  PREVIOUS_VERSIONS_MAX, STORAGE, enabled, manifest_compression, option_refusal,
                                  refusal, storage)
from core.iceberg.sync import (IcebergSyncResult, after_drop, after_move, sync, sync_after_commit,
                               visible_entries)

__all__ = ["COMPATIBLE", "DELETE_AFTER_COMMIT", "FORMAT_VERSION", "IcebergSyncResult", "MANIFEST_COMPRESSION",
           "PREVIOUS_VERSIONS_MAX", "STORAGE", "after_drop", "after_move", "enabled", "iceberg_location",
           "manifest_compression", "metadata_dir", "option_refusal", "refusal", "storage", "sync",
           "sync_after_commit", "visible_entries"]
