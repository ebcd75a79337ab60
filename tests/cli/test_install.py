"""`make install` for a user: the console script through pip/pipx, man pages where `man`
finds them, completions where bash, zsh and fish look."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_install_puts_script_man_pages_and_completions_in_place(tmp_path: Path) -> None:
    prefix, home = tmp_path / "prefix", tmp_path / "home"
    record = tmp_path / "installed-from"
    recorder = tmp_path / "record.sh"
    recorder.write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    recorder.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKECTL_", "XDG_", "MAKE"))}
    env.update(HOME=str(home), LAKECTL_INSTALL_CMD=str(recorder))
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "install", f"PREFIX={prefix}"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert record.read_text().split() == [str(ROOT)]  # the console script step got the project
    pages = sorted(p.name for p in (ROOT / "man").glob("*.1"))
    assert sorted(p.name for p in (prefix / "share/man/man1").iterdir()) == pages
    for name in pages:
        assert (prefix / "share/man/man1" / name).read_bytes() == (ROOT / "man" / name).read_bytes()
    installed = {prefix / "share/bash-completion/completions/lakectl": "lakectl.bash",
                 prefix / "share/zsh/site-functions/_lakectl": "_lakectl",
                 home / ".config/fish/completions/lakectl.fish": "lakectl.fish"}
    for path, source in installed.items():
        assert path.read_text() == (ROOT / "completions" / source).read_text(), path
    assert not (home / ".local").exists()  # PREFIX, not the default, received everything
    # bash loads the installed script and registers the completion function
    bash = shutil.which("bash")
    if bash:
        out = subprocess.run([bash, "--norc", "-c", f"source {prefix}/share/bash-completion/completions/lakectl"
                                                    " && complete -p lakectl"], capture_output=True, text=True)
        assert out.returncode == 0 and "lakectl" in out.stdout, out.stderr
    if shutil.which("man"):
        out = subprocess.run(["man", "-M", str(prefix / "share/man"), "-w", "lakectl-scan"], capture_output=True,
                             text=True)
        assert out.stdout.strip() == str(prefix / "share/man/man1/lakectl-scan.1"), out.stderr
