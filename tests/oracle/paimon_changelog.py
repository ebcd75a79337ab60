"""List and read every snapshot's changelog files with the official reader's (pypaimon's)
metadata classes, into an Arrow IPC file.

Runs inside the oracle virtualenv (pypaimon 2.1.0 and its pinned pyarrow), never in
lakectl's own environment; tests call it as a subprocess through ``tests/interop/oracle.py``.

Usage::

    paimon_changelog.py TABLE_PATH OUT.arrow

For each snapshot pypaimon's ``SnapshotManager`` lists, ``ManifestListManager.read_changelog``
decodes the snapshot's ``changelogManifestList`` and ``ManifestFileManager.read`` its
manifests (pypaimon's own Avro decoding, so malformed manifests fail here); each ADD entry's
file is located with pypaimon's path factory and read with pyarrow as it is stored
(``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and the table columns). OUT.arrow holds
those rows with ``_SNAPSHOT_ID``, ``_BUCKET`` and ``_FILE_NAME`` columns in front, snapshot
by snapshot, files in manifest order. Prints one JSON line on stdout::

    {"rows": int, "latest_snapshot": int | null,
     "snapshots": [{"id": int, "commit_kind": str, "changelog_manifest_list": str | null,
                    "changelog_record_count": int | null,
                    "files": [{"file_name": str, "bucket": int, "level": int, "kind": int,
                               "row_count": int, "rows_read": int, "file_size": int,
                               "size_on_disk": int, "min_sequence_number": int,
                               "max_sequence_number": int, "schema_id": int}, ...]}, ...]}
"""

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager
from pypaimon.table.file_store_table import FileStoreTable
from pypaimon.utils.file_store_path_factory import canonical_data_file_path

FRONT = [("_SNAPSHOT_ID", pa.int64()), ("_BUCKET", pa.int32()), ("_FILE_NAME", pa.string())]


def _local(path):
    return path[len("file://"):] if path.startswith("file://") else (path[5:] if path.startswith("file:") else path)


def main(argv):
    table_path, out = argv[0], argv[1]
    table = FileStoreTable.from_path(table_path)
    snapshots = table.snapshot_manager().list_snapshots()
    lists = ManifestListManager(table)
    manifests = ManifestFileManager(table)

    parts = []
    report = []
    for snapshot in snapshots:
        files = []
        for meta in lists.read_changelog(snapshot):
            for entry in manifests.read(meta.file_name, drop_stats=False, file_size=meta.file_size):
                f = entry.file
                path = f.physical_path() if f.external_path else canonical_data_file_path(
                    table, tuple(entry.partition.values), entry.bucket, f.file_name)
                rows_read = None
                if entry.kind == 0:
                    data = pq.ParquetFile(_local(path)).read()  # no hive partition discovery
                    rows_read = data.num_rows
                    n = data.num_rows
                    front = [pa.array([snapshot.id] * n, pa.int64()), pa.array([entry.bucket] * n, pa.int32()),
                             pa.array([f.file_name] * n, pa.string())]
                    parts.append(pa.Table.from_arrays(front + list(data.columns),
                                                      names=[n for n, _ in FRONT] + data.column_names))
                files.append({
                    "file_name": f.file_name, "bucket": entry.bucket, "level": f.level, "kind": entry.kind,
                    "row_count": f.row_count, "rows_read": rows_read, "file_size": f.file_size,
                    "size_on_disk": os.path.getsize(_local(path)) if os.path.exists(_local(path)) else None,
                    "min_sequence_number": f.min_sequence_number, "max_sequence_number": f.max_sequence_number,
                    "schema_id": f.schema_id,
                })
        report.append({
            "id": snapshot.id, "commit_kind": snapshot.commit_kind,
            "changelog_manifest_list": snapshot.changelog_manifest_list,
            "changelog_record_count": snapshot.changelog_record_count,
            "files": files,
        })

    if parts:
        data = pa.concat_tables(parts, promote_options="default")
    else:
        data = pa.schema([pa.field(n, t) for n, t in FRONT]).empty_table()
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
        writer.write_table(data)

    latest = table.snapshot_manager().get_latest_snapshot()
    print(json.dumps({"rows": data.num_rows, "latest_snapshot": latest.id if latest else None,
                      "snapshots": report}))


if __name__ == "__main__":
    main(sys.argv[1:])
