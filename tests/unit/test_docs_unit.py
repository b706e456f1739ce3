"""The guides hold together: README.md stays short, and every link in it, HACKING.md and docs/
leads to a file that exists, and to a heading in it when it names one. No Docker."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # tests/unit/ in the repository
PAGES = [ROOT / "README.md", ROOT / "HACKING.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```.*?```", re.S)
CODE = re.compile(FENCE.pattern + r"|`[^`\n]*`", re.S)  # a link in code is text, not a link
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set:
    """GitHub's slug of each heading: lowercase, only letters, digits, spaces, - and _, spaces to -."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links(page):
    broken = []
    for target in LINK.findall(CODE.sub("", page.read_text())):
        if re.match(r"(https?|mailto):", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(file):
            broken.append(f"{target}: no such heading")
    assert not broken, broken


def test_readme_is_short_and_says_how_to_test_first():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    assert any("scripts/test" in line for line in lines[:100])
