"""Logging of core and lakectl to stderr, at the level -v / -q ask for."""

from __future__ import annotations

import logging
import sys


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (the test runner swaps it per call)."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure_logging(verbose: int, quiet: bool = False) -> None:
    """core and lakectl log to stderr: warnings (errors only with --quiet), INFO (engine
    choice...) with -v, DEBUG with -vv."""
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.ERROR if quiet else logging.WARNING
    for name in ("core", "lakectl"):
        logger = logging.getLogger(name)
        logger.handlers = [h for h in logger.handlers if not isinstance(h, _StderrHandler)]
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
