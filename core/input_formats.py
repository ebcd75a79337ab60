"""The input formats ``write`` reads, as names only: shell completion lists them without
loading pyarrow (``core.sources`` reads them)."""

FORMATS = ("parquet", "csv", "json", "jsonl", "orc")
