"""The README and the manual's pages as the tests read them: headings, links,
and the examples they show."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "restsvc" / "docs"
PAGES = sorted(DOCS.glob("*.md"))
BENCHMARK = ROOT / "tests" / "benchmark" / "README.md"


def documents():
    """Every Markdown document of the project's documentation."""
    return [README, *PAGES, BENCHMARK]


def anchor(title):
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _prose(text):
    """The text without its code: fenced blocks and indented blocks."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"(?:^(?: {4}| {7}).*\n)+", "", text, flags=re.MULTILINE)


def headings(text):
    """(level, title) of each heading, in order."""
    return [(len(hashes), title.strip()) for hashes, title in
            re.findall(r"^(#{1,4}) (.+)$", _prose(text), flags=re.MULTILINE)]


def links(path):
    """(target, section) of each Markdown link of a document: target is a
    relative path or URL ('' for the same document), section an anchor or ''."""
    text = re.sub(r"`[^`\n]*`", "", _prose(path.read_text(encoding="utf-8")))
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        file, _, section = target.partition("#")
        found.append((file, section))
    return found
