"""Where new data files go when ``data-file.external-paths`` is set: outside the table directory.

Java Paimon 1.0 has no such option (1.1 added it); pypaimon 2.1 is the reference this module
reproduces (``common/external_path_provider.py``, ``utils/file_store_path_factory.py``):

- ``data-file.external-paths`` is a comma-separated list of roots, each with a scheme
  (``file:///x``, ``s3://b/x``); ``data-file.external-paths.strategy`` picks one per file:
  ``none`` (the default: files stay in the table directory), ``round-robin``, ``specific-fs``
  (round-robin over the roots whose scheme is ``data-file.external-paths.specific-fs``),
  ``weight-robin`` (a random root, drawn by ``data-file.external-paths.weights``; round-robin
  without weights or with one root) or ``entropy-inject`` (round-robin, with hash directories
  between the bucket and the file).
- Under the chosen root a file keeps the layout it would have in the table directory
  (``k=v/.../bucket-N/<file>``), and ``_EXTERNAL_PATH`` records that full path with the root's
  scheme, as pypaimon writes it (``file:///x`` becomes ``file:/x/...``, Hadoop's spelling).
- Each writer of one (partition, bucket) starts the round robin at a random root, so that many
  small writes spread over the roots as pypaimon's do (``entropy-inject`` starts at the second).
- ``entropy-inject`` spreads files over object-store prefixes: the low 20 bits of the file
  name's murmur3_32, as a binary string, cut into ``4/4/4/8`` bit directories
  (``<root>/<k=v/...>/bucket-N/0110/1001/0001/10100011/<file>``).

A strategy outside ``WRITTEN_STRATEGIES`` is refused for writes by the option rule in
core.option_catalog, which names it.
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

WRITTEN_STRATEGIES = ("none", "round-robin", "specific-fs", "weight-robin", "entropy-inject")
_ENTROPY_BITS, _ENTROPY_DIR_BITS, _ENTROPY_DIRS = 20, 4, 3


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


def validate(options: Mapping[str, str]) -> None:
    """Refuse bad external-path settings when a table is created or altered, not at its first
    write (a root without a scheme, specific-fs without its scheme, weights that do not fit).

    Raises:
        UsageError: as ``roots`` and the weights check say.
    """
    if unsupported_strategy(options):
        return  # refused for writes by the option rule, which names it; reads go on
    found = roots(options)
    if found and strategy(options) == "weight-robin" and len(found) > 1:
        _weights(options, len(found))


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
    entropy: bool = False
    _position: int = field(default=0)

    def __post_init__(self) -> None:
        # pypaimon's entropy provider starts at 0, its round robin at a random root.
        self._position = 0 if self.entropy else random.randrange(len(self.roots))

    def next_path(self, file_name: str) -> str:
        """Where the next file goes: the next root (or a weighted draw), then the bucket's layout."""
        if self.weights:
            cumulative = [sum(self.weights[:i + 1]) for i in range(len(self.weights))]
            index = min(bisect.bisect_right(cumulative, random.random() * cumulative[-1]), len(self.roots) - 1)
        else:
            self._position = (self._position + 1) % len(self.roots)
            index = self._position
        if self.entropy:
            return join(self.roots[index], self.relative_bucket_dir, entropy_dirs(file_name), file_name)
        return join(self.roots[index], self.relative_bucket_dir, file_name)


def entropy_dirs(file_name: str) -> str:
    """The hash directories ``entropy-inject`` puts before a file: the low 20 bits of its
    name's murmur3_32 (the top bit set first, so the binary string keeps its leading zeros),
    as three 4-bit directories and one of the remaining 8 bits."""
    from core.bucket import murmur3_32  # numpy and pyarrow: not for option checks

    bits = format(murmur3_32(file_name.encode("utf-8")) | 0x8000_0000, "032b")[-_ENTROPY_BITS:]
    cut = _ENTROPY_DIRS * _ENTROPY_DIR_BITS
    return "/".join([bits[i:i + _ENTROPY_DIR_BITS] for i in range(0, cut, _ENTROPY_DIR_BITS)] + [bits[cut:]])


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
    chosen = strategy(options)
    weights = _weights(options, len(found)) if chosen == "weight-robin" and len(found) > 1 else None
    return ExternalPathProvider(found, relative_bucket_dir.strip("/"), weights, entropy=chosen == "entropy-inject")


def relative_bucket_dir(bucket_dir: str, partition_depth: int) -> str:
    """The last ``partition_depth`` + 1 components of a bucket directory (``k=v/.../bucket-N``):
    partition values are escaped, so none holds a ``/``."""
    return "/".join(bucket_dir.rstrip("/").split("/")[-(partition_depth + 1):])
