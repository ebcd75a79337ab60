"""List a Paimon table's snapshots as the official reader (pypaimon) decodes them.

Runs inside the oracle virtualenv; tests call it as a subprocess.

Usage::

    paimon_snapshots.py TABLE_PATH [--watermark W ...]

Prints one JSON line::

    {"snapshots": [{"id", "commit_user", "commit_identifier", "commit_kind", "watermark"}, ...],
     "later_or_equal_watermark": {"W": snapshot id | null, ...}}

``later_or_equal_watermark`` is pypaimon's SnapshotManager lookup of the first snapshot whose
watermark is at least W (a binary search that assumes watermarks never go back).
"""

import argparse
import json
import sys

from pypaimon.table.file_store_table import FileStoreTable


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table_path")
    parser.add_argument("--watermark", type=int, action="append", default=[])
    args = parser.parse_args(argv)
    manager = FileStoreTable.from_path(args.table_path).snapshot_manager()
    snapshots = [{"id": s.id, "commit_user": s.commit_user, "commit_identifier": s.commit_identifier,
                  "commit_kind": s.commit_kind, "watermark": s.watermark} for s in manager.list_snapshots()]
    found = {}
    for w in args.watermark:
        snapshot = manager.later_or_equal_watermark(w)
        found[str(w)] = snapshot.id if snapshot is not None else None
    print(json.dumps({"snapshots": snapshots, "later_or_equal_watermark": found}))


if __name__ == "__main__":
    main(sys.argv[1:])
