"""The zip of ``core`` that the Spark engine ships to executors imports on its own."""

import subprocess
import sys
import zipfile
from pathlib import Path

import core
from core.engines.spark import core_archive


def test_archive_holds_every_core_module_and_imports_without_the_installed_package(tmp_path):
    archive = core_archive()
    root = Path(core.__file__).parent
    expected = {str(Path("core") / p.relative_to(root)) for p in root.rglob("*.py")}
    assert set(zipfile.ZipFile(archive).namelist()) == expected
    # Hide the editable install (its finder) so the only `core` is the one in the zip.
    probe = (
        "import sys\n"
        "sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
        "sys.path = [p for p in sys.path if p.rstrip('/') != %r]\n"
        "sys.path.insert(0, %r)\n"
        "import core.kernels.write, core.kernels.read, core.kernels.compact, core.rows\n"
        "print(core.__file__)\n" % (str(root.parent), archive))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip().startswith(archive)
