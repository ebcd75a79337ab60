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

Patterns are shell-style (``fnmatch``) over ``DB.TABLE``; every matching pattern applies, in
file order, so a later one overrides an earlier one key by key.
"""

from __future__ import annotations

from typing import Any

from core.ops.maintain import VERBS, Policy, policy_for, with_overrides

# config key -> (Policy field, accepted types)
_KEYS: dict[str, tuple[str, tuple[type, ...]]] = {
    "skip": ("skip", (bool,)),
    "skip-verbs": ("skip_verbs", (list,)),
    "orphan-age": ("orphan_age", (str,)),
    "full-compaction": ("full_compaction", (bool,)),
    "small-files-trigger": ("small_files_trigger", (int,)),
    "deletion-vector-ratio-trigger": ("deletion_vector_ratio_trigger", (float, int)),
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
        if key == "skip-verbs":
            bad = [v for v in value if v not in VERBS]
            if bad:
                raise cf.error(keys, f"key {'.'.join(keys)!r}: unknown verbs {bad}; known: {', '.join(VERBS)}")


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
                "orphan_age": p.orphan_age, "full_compaction": p.full_compaction,
                "small_files_trigger": p.small_files_trigger,
                "deletion_vector_ratio_trigger": p.deletion_vector_ratio_trigger,
                "patterns": ",".join(pat for pat, _ in self.patterns if _matches(name, pat))}


def _matches(name: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(name, pattern)
