"""README is the one document: its table of contents lists every section and
every link in it leads to one."""
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _anchor(title):
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _sections(text):
    return [(len(hashes), title) for hashes, title in
            re.findall(r"^(##|###) (.+)$", text, flags=re.MULTILINE) if title != "Contents"]


def test_the_contents_list_every_section_in_order():
    text = README.read_text(encoding="utf-8")
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^( *)- \[(.+)\]\(#([^)]+)\)$", contents, flags=re.MULTILINE)
    assert [(2 + len(indent) // 2, title) for indent, title, _ in listed] == _sections(text)
    assert all(anchor == _anchor(title) for _, title, anchor in listed)


def test_every_link_to_a_section_leads_to_one():
    text = README.read_text(encoding="utf-8")
    anchors = {_anchor(title) for _, title in _sections(text)}
    assert set(re.findall(r"\]\(#([^)]+)\)", text)) <= anchors
