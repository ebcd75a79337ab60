"""``lakectl maintain``'s policy from the TOML config: defaults, then table patterns.

\b
    [maintain]
    orphan-age = "1d"              # remove-orphan-files only past this age (Paimon's default)
    skip-verbs = ["expire-tags"]   # verbs never run
    [maintain.tables."shop.*"]
    full-compaction = true
    [maintain.tables."*.events_*"]
    skip-verbs = ["compact"]
    orphan-age = "3d"
    [maintain.tables."tmp.*"]
    skip = true
    [maintain.tables."batch.*"]
    orphan-age = "10m"             # under 1h: only beside orphan-force, with no writer running
    orphan-force = true

Patterns are shell-style (``fnmatch``) over ``DB.TABLE``; every matching pattern applies, in
file order, so a later one overrides an earlier one key by key.

An ``orphan-age`` under one hour (``core.ops.orphans.MIN_AGE_SECONDS``) is refused when the
config is read unless the same section says ``orphan-force = true``, the policy's spelling of
``remove-orphan-files --force``: a commit in progress writes its files before it publishes
the snapshot that references them, so a young unreferenced file may be a running write's.
(A table whose patterns combine into a short age without the force, e.g. a later pattern
setting ``orphan-force = false`` alone, is refused by ``maintain`` for that table.)
"""

from __future__ import annotations

from typing import Any

from core.errors import UsageError
from core.ops.maintain import VERBS, Policy, policy_for, with_overrides
from core.ops.orphans import orphan_age_seconds

# config key -> (Policy field, accepted types)
_KEYS: dict[str, tuple[str, tuple[type, ...]]] = {
    "skip": ("skip", (bool,)),
    "skip-verbs": ("skip_verbs", (list,)),
    "orphan-age": ("orphan_age", (str,)),
    "orphan-force": ("orphan_force", (bool,)),
    "full-compaction": ("full_compaction", (bool,)),
    "small-files-trigger": ("small_files_trigger", (int,)),
    "deletion-vector-ratio-trigger": ("deletion_vector_ratio_trigger", (float, int)),
}


# config key -> why its value is out of range (None when fine)
_RANGES = {
    "small-files-trigger": lambda v: None if v >= 1 else "must be a whole number of at least 1",
    "deletion-vector-ratio-trigger": lambda v: None if 0 <= v <= 1 else "must be a fraction from 0 to 1",
}


def _check_keys(cf: Any, table: dict[str, Any], prefix: tuple[str, ...]) -> None:
    for key, value in table.items():
        keys = (*prefix, key)
        if key == "tables" and prefix == ("maintain",):
            continue
        if key not in _KEYS:
            raise cf.error(keys, f"unknown key {'.'.join(keys)!r}; known: {', '.join(_KEYS)}")
        types = _KEYS[key][1]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise cf.error(keys, f"key {'.'.join(keys)!r} has the wrong type ({type(value).__name__})")
        why = _RANGES.get(key, lambda v: None)(value)
        if why:
            raise cf.error(keys, f"key {'.'.join(keys)!r} = {value!r}: {why}")
        if key == "skip-verbs":
            bad = [v for v in value if v not in VERBS]
            if bad:
                raise cf.error(keys, f"key {'.'.join(keys)!r}: unknown verbs {bad}; known: {', '.join(VERBS)}")
    if "orphan-age" in table:
        _check_orphan_age(cf, table, prefix)


def _check_orphan_age(cf: Any, table: dict[str, Any], prefix: tuple[str, ...]) -> None:
    """A duration, and not under the floor unless this same section forces it (so a short age
    never comes from a section that does not say, right there, that no writer runs)."""
    keys = (*prefix, "orphan-age")
    try:
        orphan_age_seconds(table["orphan-age"], force=table.get("orphan-force", False),
                           name=f"key {'.'.join(keys)!r} =", force_name="orphan-force = true in the same section")
    except UsageError as e:
        raise cf.error(keys, str(e)) from None


def check_section(cf: Any, section: dict[str, Any]) -> None:
    """Raise the config file's UsageError for a bad ``[maintain]`` section."""
    _check_keys(cf, section, ("maintain",))
    tables = section.get("tables", {})
    if not isinstance(tables, dict):
        raise cf.error(("maintain", "tables"), "key 'maintain.tables' must be a table of patterns")
    for pattern, overrides in tables.items():
        if not isinstance(overrides, dict):
            raise cf.error(("maintain", "tables", pattern), f"maintain.tables.{pattern!r} must be a table")
        _check_keys(cf, overrides, ("maintain", "tables", pattern))


def _fields(table: dict[str, Any]) -> dict[str, Any]:
    return {_KEYS[k][0]: v for k, v in table.items() if k in _KEYS}


class Policies:
    """The effective policy of each table, from a config's ``[maintain]`` section."""

    def __init__(self, section: dict[str, Any] | None):
        section = section or {}
        self.default = with_overrides(Policy(), _fields(section))
        self.patterns = [(p, _fields(t)) for p, t in section.get("tables", {}).items()]

    def __call__(self, name: str) -> Policy:
        return policy_for(name, self.default, self.patterns)

    def describe(self, name: str) -> dict[str, Any]:
        p = self(name)
        return {"table": name, "skip": p.skip, "skip_verbs": ",".join(sorted(p.skip_verbs)),
                "orphan_age": p.orphan_age, "orphan_force": p.orphan_force, "full_compaction": p.full_compaction,
                "small_files_trigger": p.small_files_trigger,
                "deletion_vector_ratio_trigger": p.deletion_vector_ratio_trigger,
                "patterns": ",".join(pat for pat, _ in self.patterns if _matches(name, pat))}


def _matches(name: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)
