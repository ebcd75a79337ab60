"""Where new data files go when ``data-file.external-paths`` is set: outside the table directory.

Java Paimon 1.0 has no such option (1.1 added it); pypaimon 2.1 is the reference this module
reproduces (``common/external_path_provider.py``, ``utils/file_store_path_factory.py``):

- ``data-file.external-paths`` is a comma-separated list of roots, each with a scheme
  (``file:///x``, ``s3://b/x``); ``data-file.external-paths.strategy`` picks one per file:
  ``none`` (the default: files stay in the table directory), ``round-robin``, ``specific-fs``
  (round-robin over the roots whose scheme is ``data-file.external-paths.specific-fs``) or
  ``weight-robin`` (a random root, drawn by ``data-file.external-paths.weights``).
- Under the chosen root a file keeps the layout it would have in the table directory
  (``k=v/.../bucket-N/<file>``), and ``_EXTERNAL_PATH`` records that full path with the root's
  scheme, as pypaimon writes it (``file:///x`` becomes ``file:/x/...``, Hadoop's spelling).
- Each writer of one (partition, bucket) starts the round robin at a random root, so that many
  small writes spread over the roots as pypaimon's do.

``entropy-inject`` (hash directories between the bucket and the file) is refused by the option
rule in core.option_catalog, which names it.
"""
from __future__ import annotations

import bisect
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.errors import UsageError
from core.fileio import join

PATHS = "data-file.external-paths"
STRATEGY = "data-file.external-paths.strategy"
SPECIFIC_FS = "data-file.external-paths.specific-fs"
WEIGHTS = "data-file.external-paths.weights"

WRITTEN_STRATEGIES = ("none", "round-robin", "specific-fs", "weight-robin")


def strategy(options: Mapping[str, str]) -> str:
    """The strategy option, normalised (pypaimon's default is ``none``)."""
    return (options.get(STRATEGY) or "none").strip().lower()


def unsupported_strategy(options: Mapping[str, str]) -> bool:
    """True when external paths are set with a strategy lakectl does not write."""
    return bool(options.get(PATHS, "").strip()) and strategy(options) not in WRITTEN_STRATEGIES


def roots(options: Mapping[str, str]) -> list[str]:
    """The external roots new data files go to; empty when files stay in the table directory.

    Raises:
        UsageError: a root without a scheme, ``specific-fs`` without its scheme option, or no
            root left after the ``specific-fs`` filter (pypaimon refuses the same).
    """
    listed = [p.strip() for p in options.get(PATHS, "").split(",") if p.strip()]
    chosen = strategy(options)
    if not listed or chosen == "none":
        return []
    fs = (options.get(SPECIFIC_FS) or "").strip().lower()
    if chosen == "specific-fs" and not fs:
        raise UsageError(f"option {STRATEGY}=specific-fs needs {SPECIFIC_FS}")
    out = []
    for root in listed:
        scheme = _scheme(root)
        if not scheme:
            raise UsageError(f"option {PATHS}: {root!r} has no scheme (file://, s3://, ...)")
        if chosen != "specific-fs" or scheme.lower() == fs:
            out.append(_hadoop_spelling(root))
    if not out:
        raise UsageError(f"option {PATHS}: no path has the scheme {fs!r} of {SPECIFIC_FS}")
    return out


def _weights(options: Mapping[str, str], count: int) -> list[int] | None:
    text = (options.get(WEIGHTS) or "").strip()
    if not text:
        return None
    try:
        weights = [int(w) for w in text.split(",")]
    except ValueError:
        raise UsageError(f"option {WEIGHTS}={text!r}: expected comma-separated positive integers") from None
    if len(weights) != count or any(w <= 0 for w in weights):
        raise UsageError(f"option {WEIGHTS}={text!r}: needs one positive weight per path of {PATHS}")
    return weights


def _scheme(path: str) -> str:
    head, sep, _ = path.partition(":")
    return head if sep and head and "/" not in head else ""


def _same_store_scheme(scheme: str) -> str:
    scheme = scheme.lower()
    return {"local": "file", "s3a": "s3"}.get(scheme, scheme)


def _hadoop_spelling(root: str) -> str:
    """``file:///x`` as ``file:/x``: pypaimon records local external paths that way, and
    lakectl's local FileIO reads both."""
    if root.startswith("file:///"):
        return "file:/" + root[len("file:///"):]
    return root


@dataclass
class ExternalPathProvider:
    """The external path of each new data file of one (partition, bucket)."""

    roots: Sequence[str]
    relative_bucket_dir: str  # ``k=v/.../bucket-N``, as in the table directory
    weights: Sequence[int] | None = None
    _position: int = field(default=0)

    def __post_init__(self) -> None:
        self._position = random.randrange(len(self.roots))

    def next_path(self, file_name: str) -> str:
        """Where the next file goes: the next root (or a weighted draw), then the bucket's layout."""
        if self.weights:
            cumulative = [sum(self.weights[:i + 1]) for i in range(len(self.weights))]
            index = min(bisect.bisect_right(cumulative, random.random() * cumulative[-1]), len(self.roots) - 1)
        else:
            self._position = (self._position + 1) % len(self.roots)
            index = self._position
        return join(self.roots[index], self.relative_bucket_dir, file_name)


def provider(options: Mapping[str, str], relative_bucket_dir: str, *,
             store_scheme: str | None = None) -> ExternalPathProvider | None:
    """The external path provider for one (partition, bucket), or None when its files stay in the
    table directory. ``relative_bucket_dir`` is the bucket's directory under the table root.

    Args:
        store_scheme: the scheme of the table's store (``file``, ``s3``); when given, every root
            must be on it, since one FileIO writes, reads and deletes all the table's files.

    Raises:
        UsageError: bad settings (see ``roots``), or a root on another store.
    """
    found = roots(options)
    if not found:
        return None
    if store_scheme is not None:
        other = [r for r in found if _same_store_scheme(_scheme(r)) != _same_store_scheme(store_scheme)]
        if other:
            raise UsageError(f"option {PATHS}: {other[0]!r} is not on the table's store ({store_scheme}://); "
                             "lakectl writes external files only to the table's own store")
    weights = _weights(options, len(found)) if strategy(options) == "weight-robin" and len(found) > 1 else None
    return ExternalPathProvider(found, relative_bucket_dir.strip("/"), weights)


def relative_bucket_dir(bucket_dir: str, partition_depth: int) -> str:
    """The last ``partition_depth`` + 1 components of a bucket directory (``k=v/.../bucket-N``):
    partition values are escaped, so none holds a ``/``."""
    return "/".join(bucket_dir.rstrip("/").split("/")[-(partition_depth + 1):])
