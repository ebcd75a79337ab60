"""The Java oracle's class-data archive (``make java-oracle``, tests/interop/java_cds.py) is
in use: an oracle JVM maps Paimon's classes from it rather than loading them from the bundle
jar, which is what halves each of the test run's JVM starts. Without the archive the same
probe sees them loaded from the jar, so the check can fail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from java_oracle import _class_data_flags, _oracle_venv, java_classpath

pytestmark = [pytest.mark.interop, pytest.mark.java]


def _paimon_class_sources(flags: list[str], classpath: str, tmp_path: Path) -> set[str]:
    """Where the JVM found each org.apache.paimon class it loaded for a usage error."""
    done = subprocess.run(["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *flags,
                           "-Xlog:class+load=info:file=" + str(tmp_path / "load.log"), "-cp", classpath,
                           "JavaPaimonOracle", "read", str(tmp_path / "no-such-table")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0  # no table there; Paimon's classes were loaded to find out
    sources = set()
    for line in (tmp_path / "load.log").read_text().splitlines():
        if " org.apache.paimon." in line and "source:" in line:
            sources.add(line.split("source:", 1)[1].strip().split(" ")[0])
    return sources


def test_the_oracle_jvm_maps_paimon_classes_from_the_archive(tmp_path: Path) -> None:
    if not (_oracle_venv() / "java-oracle.jsa").is_file():
        pytest.fail("no class-data archive: make java-oracle records it")
    classpath = java_classpath()
    assert classpath.endswith("java-oracle.jar")
    shared = _paimon_class_sources(_class_data_flags(classpath), classpath, tmp_path)
    assert shared and all(s.startswith("shared") for s in shared), shared  # "shared objects file (top)"
    plain = _paimon_class_sources([], classpath, tmp_path)
    assert plain and not any(s.startswith("shared") for s in plain), plain
