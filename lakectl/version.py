"""The version line `lakectl --version` prints. Kept apart from the command tree so that the
console entry point (lakectl/app.py) can answer --version without importing Typer or core."""

from __future__ import annotations


def version_line() -> str:
    from importlib.metadata import PackageNotFoundError, version  # 40 ms: only for --version

    try:
        return f"lakectl {version('lakectl')}"
    except PackageNotFoundError:
        return "lakectl (not installed)"
