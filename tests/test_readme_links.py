"""The README and docs link only to files inside the repository, and every such file exists."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_markdown_links_point_to_existing_files_inside_the_repository():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    targets = [(page, link.split("#")[0]) for page in pages for link in LINK.findall(page.read_text())]
    local = [(page, target) for page, target in targets if target and not re.match(r"[a-z]+://", target)]
    assert local, "the README links to docs/estimators.md"
    for page, target in local:
        path = (page.parent / target).resolve()
        assert path.is_relative_to(REPO) and path.exists(), (page.name, target)
