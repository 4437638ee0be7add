"""The docs link only inside the repository, and every link resolves."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # links inside code are not links


def _links() -> list[tuple[Path, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = CODE.sub("", page.read_text())
        found += [(page, m.group(1)) for m in LINK.finditer(text)]
    return found


def test_docs_links_resolve_inside_the_repository():
    links = _links()
    assert len(links) > 10
    outside = [f"{page.name}: {target}" for page, target in links if re.match(r"[a-z]+:", target)]
    assert not outside, f"links leaving the repository: {outside}"
    broken = [f"{page.name}: {target}" for page, target in links
              if target.split("#")[0] and not (page.parent / target.split("#")[0]).exists()]
    assert not broken, f"broken links: {broken}"


def test_the_link_check_sees_a_broken_link(tmp_path):
    assert LINK.findall(CODE.sub("", "see [x](missing.md) and `[y](in-code.md)`")) == ["missing.md"]
