"""The house's layers hold (issue 26): the contracts in pyproject.toml ([tool.importlinter]:
lakectl over core; in core the API over operations over engines over kernels over the commit
over the table handle over metadata, options, storage and errors), and core has no import
circle at all, so a reader can tell what depends on what and a command imports only what it
uses. Type-only imports count: they are dependencies a reader has to follow too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_are_kept() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "3 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_a_contract(tmp_path: Path) -> None:
    """The contracts bite: a copy of the code whose schema module imports an operation (as
    core/table.py's facade once made every operation part of one circle) is refused."""
    for package in ("core", "lakectl"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    schema = tmp_path / "core" / "schema.py"
    schema.write_text(schema.read_text() + "\n\ndef _upward():\n    from core.ops.scan import scan  # noqa\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and "core.schema -> core.ops.scan" in result.stdout


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v) & modules:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


@pytest.mark.parametrize("package", ["core", "lakectl"])
def test_no_import_circle(package: str) -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    graph = grimp.build_graph(package, cache_dir=None)
    assert _cycles(graph, set(graph.modules)) == []
