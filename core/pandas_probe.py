"""Keep pandas out of a lakectl process that never hands it to pyarrow.

The first ``pa.array``/``pa.scalar`` of a process imports pandas (0.3 s and 60 MB) only to
ask whether a value is a pandas object. A lakectl command never gives pyarrow pandas
objects, so the console script installs a gate (``install()``) that refuses ``import
pandas`` until PySpark is loaded: pyarrow's one-time probe then fails, and pyarrow treats
values as plain Python. The gate costs nothing at start (pyarrow is not imported for it), so
metadata commands that never touch Arrow do not pay for pyarrow either.

PySpark does hand pandas objects to pyarrow: with ``pyspark`` loaded the gate lets pandas
through, and the Spark engine calls ``restore()`` to turn pyarrow's integration back on.
"""

from __future__ import annotations

import sys


class _PandasGate:
    """A meta-path finder that refuses ``import pandas`` while PySpark is not loaded."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the finder protocol
        if name == "pandas" and "pyspark" not in sys.modules:
            raise ImportError("pandas is not loaded by the lakectl command line outside Spark "
                              "(core/pandas_probe.py)")
        return None


_GATE = _PandasGate()


def install() -> None:
    """Refuse pandas in this process until PySpark is loaded (unless it is loaded already)."""
    if "pandas" not in sys.modules and _GATE not in sys.meta_path:
        sys.meta_path.insert(0, _GATE)


def restore() -> None:
    """Lift the gate and import pandas into pyarrow's integration now (asking for it retries
    the import pyarrow's probe may have failed)."""
    if _GATE in sys.meta_path:
        sys.meta_path.remove(_GATE)
    try:
        import pyarrow.lib

        pyarrow.lib._pandas_api.pd  # noqa: B018 - the property imports pandas and enables it
    except Exception:  # noqa: BLE001 - without pandas installed there is nothing to restore
        pass
