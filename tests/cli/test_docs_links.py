"""The README and docs/ link only documents the repository holds: a clone has every one."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve_inside_the_repository(document: Path) -> None:
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", document.read_text())
             if "://" not in target and not target.startswith(("#", "mailto:"))]
    for target in links:
        path = (document.parent / target).resolve()
        assert path.is_relative_to(REPO), f"{document.name} links {target}, outside the repository"
        assert path.exists(), f"{document.name} links {target}, which is missing"


def test_the_readme_links_the_format_and_architecture_notes() -> None:
    text = (REPO / "README.md").read_text()
    assert "](docs/format.md)" in text and "](docs/architecture.md)" in text
