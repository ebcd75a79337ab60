"""A developer's habits work: the virtualenv's own `pytest` script collects every test
module, those importing ``tests.`` helpers included, as ``python -m pytest`` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_venv_pytest_script_collects_modules_that_import_tests_helpers() -> None:
    importing = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")
                       if "\nfrom tests." in p.read_text() or "\nimport tests." in p.read_text())
    assert importing, "no test module imports a tests. helper: this test checks nothing"
    script = Path(sys.executable).parent / "pytest"
    done = subprocess.run([str(script), "--collect-only", "-q", "-p", "no:cacheprovider", *importing],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
