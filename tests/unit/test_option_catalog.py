"""Every option Paimon defines is classified (core.option_catalog); unknown ones are warned
about and refused for writes and maintenance, not for reads."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core.option_catalog import (CATALOG, HONOURED, IGNORED, REFUSED, classify, suggestion,
                                 unknown_option_warnings)
from core.option_rules import CATALOG_RULES, EXPIRE, OPTION_RULES, READ, WRITE, unsupported

REPO = Path(__file__).resolve().parents[2]
JAVA_KEYS = Path(__file__).with_name("paimon_java_core_options.txt")
LISTER = REPO / "tests" / "oracle" / "java" / "ListCoreOptions.java"

_PYPAIMON_KEYS = """
from pypaimon.common.options.core_options import CoreOptions
from pypaimon.common.options.config_options import ConfigOption
print("\\n".join(sorted({v.key() for v in vars(CoreOptions).values() if isinstance(v, ConfigOption)})))
"""


def _oracle_python() -> str | None:
    configured = os.environ.get("LAKECTL_ORACLE_PYTHON")
    default = REPO / ".venv-oracle" / "bin" / "python"
    return configured or (str(default) if default.exists() else None)


def _unclassified(keys: list[str]) -> list[str]:
    return [k for k in keys if classify(k) is None]


def test_every_pypaimon_core_option_is_classified() -> None:
    python = _oracle_python()
    if python is None:
        pytest.skip("no pypaimon oracle virtualenv (LAKECTL_ORACLE_PYTHON)")
    keys = subprocess.run([python, "-c", _PYPAIMON_KEYS], check=True, capture_output=True, text=True).stdout.split()
    assert len(keys) > 100  # pypaimon 2.1 defines 126; an empty list would pass vacuously
    assert _unclassified(keys) == []


def test_every_java_core_option_is_classified() -> None:
    keys = JAVA_KEYS.read_text().split()
    assert len(keys) > 100  # Java Paimon 1.0 defines 158
    assert _unclassified(keys) == []


def _bundle_jar() -> str | None:
    python = _oracle_python()
    if python is None:
        return None
    venv = Path(python).parent.parent
    jars = glob.glob(str(venv / "lib/python*/site-packages/paimon_python_java/java_dependencies/"
                         "paimon-python-java-bridge.jar"))
    return jars[0] if jars else None


@pytest.mark.java
def test_checked_in_java_option_list_is_what_the_jar_defines(tmp_path: Path) -> None:
    """Regenerate the list from the bundle jar (reflection over CoreOptions' ConfigOption fields)."""
    jar = _bundle_jar()
    if jar is None or shutil.which("javac") is None:
        pytest.skip("no Java or no Paimon bundle jar")
    subprocess.run(["javac", "-nowarn", "-d", str(tmp_path), "-cp", jar, str(LISTER)], check=True)
    out = subprocess.run(["java", "-cp", f"{tmp_path}{os.pathsep}{jar}", "ListCoreOptions",
                          "org.apache.paimon.CoreOptions"], check=True, capture_output=True, text=True).stdout
    assert out.split() == JAVA_KEYS.read_text().split()


def test_classification_of_exact_keys_patterns_and_unknown_keys() -> None:
    assert classify("bucket")[0] == HONOURED
    assert classify("fields.price.aggregate-function")[0] == HONOURED
    assert classify("file-index.bloom-filter.name.fpp")[0] == HONOURED
    assert classify("file-index.bitmap.columns")[0] == IGNORED   # another index type
    assert classify("parquet.block.size")[0] == HONOURED         # exact key beats parquet.*
    assert classify("parquet.compression.codec")[0] == IGNORED
    assert classify("blob-field")[0] == REFUSED
    assert classify("buckets") is None
    assert classify("fields.price.no-such-thing") is None


def test_a_near_miss_is_suggested_and_a_far_one_is_not() -> None:
    assert suggestion("buckets") == "bucket"
    assert suggestion("merge-engin") == "merge-engine"
    assert suggestion("colour") is None
    assert unknown_option_warnings({"bucket": "2", "buckets": "4", "zzz": "1"}) == [
        "option buckets is not a Paimon option (did you mean bucket?); it is kept, but lakectl refuses to "
        "write or maintain a table carrying an option it does not know",
        "option zzz is not a Paimon option; it is kept, but lakectl refuses to write or maintain a table "
        "carrying an option it does not know"]


def test_an_unknown_option_is_refused_for_writes_and_maintenance_not_reads() -> None:
    options = {"bucket": "2", "buckets": "4"}
    assert unsupported(options, READ, has_primary_key=True, primary_keys=["id"]) == []
    for action in (WRITE, EXPIRE):
        found = unsupported(options, action, has_primary_key=True, primary_keys=["id"])
        assert [(k, v) for k, v, _ in found] == [("buckets", "4")]


def test_each_catalog_refusal_has_a_rule_and_each_rule_key_is_classified_refused() -> None:
    rules = OPTION_RULES + CATALOG_RULES
    for key, (kind, _) in CATALOG.items():
        if kind == REFUSED and "*" not in key:
            assert any(r.matches(key) for r in rules), key
    for rule in CATALOG_RULES:
        keys = [k for k in CATALOG if k == rule.pattern or rule.matches(k)]
        assert keys and all(CATALOG[k][0] == REFUSED for k in keys), rule.pattern


def test_paimon2_options_are_refused_for_the_actions_they_change() -> None:
    def refused(options: dict[str, str], action: str) -> list[str]:
        return [k for k, _, _ in unsupported(options, action, has_primary_key=False)]

    assert refused({"blob-field": "payload"}, WRITE) == ["blob-field"]
    assert refused({"blob-field": "payload"}, READ) == []
    assert refused({"blob-as-descriptor": "true"}, READ) == ["blob-as-descriptor"]
    assert refused({"blob-as-descriptor": "false"}, READ) == []
    assert refused({"type": "format-table"}, READ) == ["type"]
    assert refused({"type": "table"}, WRITE) == []
    assert refused({"file.format": "orc", "changelog-file.format": "orc"}, WRITE) == []
    assert refused({"file.format": "orc", "changelog-file.format": "avro"}, WRITE) == ["changelog-file.format"]
