"""The README stays a newcomer's page that links every docs page; README and docs link only to files inside the
repository that exist, and to headings that exist in them."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_CHARS = 12_500  # what a newcomer needs first; the rest lives in docs/


def _links(page: Path) -> list[tuple[str, str]]:
    """(path, anchor) of every local link on the page; path "" is the page itself."""
    out = []
    for link in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", link):  # https://, mailto:
            continue
        path, _, anchor = link.partition("#")
        out.append((path, anchor))
    return out


def _anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+)", line)
        if fenced or not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def test_readme_stays_under_12500_characters():
    size = len(README.read_text())
    assert size < README_MAX_CHARS, f"README.md has {size} characters; move detail to a docs/ page"


def test_readme_links_every_docs_page():
    linked = {(README.parent / path).resolve() for path, _ in _links(README) if path}
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


def test_markdown_links_point_to_existing_files_and_headings_inside_the_repository():
    links = [(page, path, anchor) for page in [README, *DOCS] for path, anchor in _links(page)]
    assert links, "the README links to docs/estimators.md"
    broken = []
    for page, path, anchor in links:
        target = (page.parent / path).resolve() if path else page  # relative to the linking page's folder
        if not (target.is_relative_to(REPO) and target.exists()):
            broken.append(f"{page.name}: {path} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{page.name}: {path}#{anchor} (no such heading)")
    assert broken == []
