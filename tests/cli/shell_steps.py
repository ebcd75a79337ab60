"""Documented shell lines run as a user would run them: literally, in order, in one bash script
(one process start for the script, not one per line), each line's exit status, stdout and
stderr kept apart so that a test can check every line. Used by the help-example and README
tests."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

# How long a follower (a line that runs until stopped) may take to print its first output.
FOLLOW_FIRST_OUTPUT_SECONDS = 60


@dataclass
class Step:
    line: str
    code: int
    out: str
    err: str


def _plain(line: str, results: Path) -> str:
    # The brace group keeps the line's own pipes and redirections as written; its stdin is empty
    # unless the line pipes into lakectl itself.
    return (f"{{ {line}\n}} >{results}.out 2>{results}.err </dev/null\n"
            f"echo $? >{results}.rc\n")


def _follow(line: str, results: Path) -> str:
    """A line that reads until stopped: stopped with SIGTERM (exit 0, as the help says) once it
    printed something (or gave up)."""
    polls = FOLLOW_FIRST_OUTPUT_SECONDS * 10
    return (f"bash -o pipefail -c {shlex.quote('exec ' + line)} >{results}.out 2>{results}.err </dev/null &\n"
            f"pid=$!\n"
            f"for _ in $(seq {polls}); do [ -s {results}.out ] && break; kill -0 $pid 2>/dev/null || break; "
            f"sleep 0.1; done\n"
            f"sleep 0.5; kill -TERM $pid 2>/dev/null; wait $pid\n"
            f"echo $? >{results}.rc\n")


def run_steps(lines: list[str], cwd: Path, env: dict[str, str], results: Path, *,
              follow: tuple[str, ...] = ("--follow",), timeout: float = 600) -> list[Step]:
    """Run LINES in order in one bash script in CWD; a line holding a FOLLOW marker is stopped
    once it printed. Returns one Step per line."""
    results.mkdir(parents=True, exist_ok=True)
    script = ["set -o pipefail"]
    for i, line in enumerate(lines):
        stem = results / str(i)
        script.append(_follow(line, stem) if any(m in line for m in follow) else _plain(line, stem))
    (results / "script.sh").write_text("\n".join(script))
    subprocess.run(["bash", str(results / "script.sh")], cwd=cwd, env=env, timeout=timeout, check=False,
                   stdin=subprocess.DEVNULL, capture_output=True)
    steps = []
    for i, line in enumerate(lines):
        stem = results / str(i)
        code = int(Path(f"{stem}.rc").read_text()) if Path(f"{stem}.rc").exists() else -1
        steps.append(Step(line, code, Path(f"{stem}.out").read_text(errors="replace"),
                          Path(f"{stem}.err").read_text(errors="replace")))
    return steps
