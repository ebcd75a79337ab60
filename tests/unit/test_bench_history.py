"""A benchmark's results file keeps its history: a new run goes first, earlier sections stay."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from history import prepend_run, run_heading  # noqa: E402


def test_each_run_goes_first_and_earlier_sections_with_their_analysis_stay(tmp_path: Path) -> None:
    out = tmp_path / "results-x.md"
    out.write_text("# X benchmark\n\n## 2026-11-20: first run\n\nAnalysis written by hand.\n")
    prepend_run(out, "# X benchmark", f"{run_heading('`x.py`')}\n\n| a | b |\n")
    prepend_run(out, "# X benchmark", f"{run_heading('`x.py --more`')}\n\n| c | d |\n")
    lines = out.read_text().splitlines()
    assert lines[0] == "# X benchmark" and lines.count("# X benchmark") == 1
    headings = [line for line in lines if line.startswith("## ")]
    assert [h.split(": ", 1)[1] for h in headings] == ["`x.py --more`", "`x.py`", "first run"]
    assert "Analysis written by hand." in lines and "| a | b |" in lines and "| c | d |" in lines


def test_a_new_file_gets_the_title(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "results-y.md"
    prepend_run(out, "# Y", "## run\n\nbody")
    assert out.read_text() == "# Y\n\n## run\n\nbody\n"
