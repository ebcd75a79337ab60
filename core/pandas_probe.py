"""pyarrow's pandas probe, skipped where pandas is never handed to pyarrow.

The first ``pa.array``/``pa.scalar`` of a process imports pandas (0.3 s and 60 MB) only to
ask whether a value is a pandas object. A lakectl process never gives pyarrow pandas
objects, so ``skip()`` lets that first probe fail once; pyarrow then treats values as plain
Python, and anything that really needs pandas (``Table.to_pandas``) still imports it on
demand. ``restore()`` turns the full integration back on for code that hands pandas objects
to pyarrow (the Spark engine, whose conversions do).
"""

from __future__ import annotations

import sys


class _NoPandas:
    """A meta-path finder that refuses ``import pandas`` while it is installed."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the finder protocol
        if name == "pandas":
            raise ImportError("pandas is not imported by lakectl's probe")
        return None


def skip() -> None:
    """Make pyarrow's one-time pandas probe fail, unless pandas is already imported."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.array([0])  # the probe: pyarrow records "no pandas" and does not look again by itself
    finally:
        sys.meta_path.remove(blocker)


def restore() -> None:
    """Import pandas into pyarrow's integration now (asking for it retries the import)."""
    try:
        import pyarrow.lib

        pyarrow.lib._pandas_api.pd  # noqa: B018 - the property imports pandas and enables it
    except Exception:  # noqa: BLE001 - without pandas installed there is nothing to restore
        pass
