"""The README and the docs/ pages link to files that exist and to headings those files have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but '-' dropped, spaces as '-'."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in text.splitlines() if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_local_link_of_a_page_resolves(page):
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        assert linked.exists(), f"{page.name}: {target} links to a missing file"
        assert not anchor or anchor in anchors(linked), f"{page.name}: {target}: no such heading"


def test_the_readme_links_every_docs_page():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in PAGES[1:] if f"(docs/{p.name}" not in text] == []
    assert len(text.splitlines()) <= 150  # it reads in five minutes; the rest is in docs/
