"""The README and the manual (restsvc/docs/*.md): the README stays within its
budget, every page says what it is for, every link leads to a page and a
section that exist, and what the pages claim about the service (settings,
commands, headers, section references in the code) is what it does."""
import configparser
import re

import pytest

from docs_support import (BENCHMARK, PAGES, README, ROOT, anchor, documents, headings, prose,
                          links)

README_BUDGET = 630      # lines (issue 37)


def test_the_readme_stays_within_its_budget():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_BUDGET, f"README.md has {lines} lines; at most {README_BUDGET}"


def test_the_readme_keeps_the_two_commands_exactly():
    text = README.read_text(encoding="utf-8")
    assert ("    python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test,postgres]'"
            " && python -m pytest -q\n") in text
    assert ("    python3 -m venv .venv && . .venv/bin/activate && pip install -e . "
            "&& restsvc serve\n") in text


def test_the_readme_contents_list_every_section_in_order():
    text = README.read_text(encoding="utf-8")
    contents = text.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^( *)- \[(.+)\]\(#([^)]+)\)$", contents, flags=re.MULTILINE)
    sections = [(level, title) for level, title in headings(text) if level > 1
                and title != "Contents"]
    assert [(2 + len(indent) // 2, title) for indent, title, _ in listed] == sections
    assert all(link == anchor(title) for _, title, link in listed)


def test_the_readme_maps_every_page_of_the_manual():
    text = README.read_text(encoding="utf-8")
    the_map = text.split("## The manual\n", 1)[1]
    assert {f"restsvc/docs/{page.name}" for page in PAGES} <= set(
        re.findall(r"\]\((restsvc/docs/[\w-]+\.md)\)", the_map))


def test_every_page_starts_with_what_a_reader_can_do_after_reading_it():
    for page in [*PAGES, BENCHMARK]:
        lines = page.read_text(encoding="utf-8").split("\n")
        assert lines[0].startswith("# "), page
        assert lines[2].startswith("After reading this page you can "), page


def test_every_page_has_one_title_and_unique_sections():
    for page in [*PAGES, BENCHMARK]:
        found = headings(page.read_text(encoding="utf-8"))
        assert [level for level, _ in found].count(1) == 1, page
        anchors = [anchor(title) for _, title in found]
        assert len(anchors) == len(set(anchors)), page


def test_every_link_leads_to_a_page_and_a_section():
    for document in documents():
        for target, section in links(document):
            if re.match(r"[a-z]+:", target):
                continue                     # http:, https:, mailto:
            path = (document.parent / target).resolve() if target else document
            assert path.exists(), f"{document.name}: link to missing {target}"
            assert path.is_relative_to(ROOT), f"{document.name}: link out of the repository"
            if section:
                assert path.suffix == ".md", f"{document.name}: {target}#{section}"
                names = {anchor(title) for _, title in headings(path.read_text(encoding="utf-8"))}
                assert section in names, f"{document.name}: no section #{section} in {path.name}"


def test_the_manual_ships_with_the_package():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    data = [item.strip() for item in config["options.package_data"]["restsvc"].split(",")]
    assert "docs/*.md" in data
    assert PAGES and all(page.parent == ROOT / "restsvc" / "docs" for page in PAGES)


# References to a section written as text: README.md "First ten minutes",
# restsvc/docs/model.md "Changing the model" (in the code, the shipped
# settings, the templates `restsvc new` writes, the CLI's help).
_REFERENCE = re.compile(r"((?:[\w.-]+/)*[\w-]+\.md|README)\W{0,3}\s*\(?\"([A-Z][^\"=]*)\"")


def _sources():
    for folder in ("restsvc", "config", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".yaml", ".xml", ".html", ".md") and path.is_file():
                yield path
    yield ROOT / "wsgi.py"


def _section_names(path):
    text = path.read_text(encoding="utf-8")
    return ({title for _, title in headings(text)}
            | set(re.findall(r"^\*\*(.+?)\.\*\*", text, flags=re.MULTILINE)))


def test_every_section_named_in_the_code_or_settings_exists():
    checked = 0
    for source in _sources():
        text = re.sub(r'"\s*\n\s*"', "", source.read_text(encoding="utf-8"))   # joined literals
        text = re.sub(r"\s*\n\s*#?\s*", " ", text)
        for name, section in _REFERENCE.findall(text.replace('\\"', '"')):
            if name == "README":
                pytest.fail(f"{source.relative_to(ROOT)}: README {section!r}: name the page")
            target = ROOT / "restsvc" / name if name.startswith("docs/") else ROOT / name
            if target is None or not target.exists():
                continue
            assert section in _section_names(target), (
                f"{source.relative_to(ROOT)}: no section {section!r} in {name}")
            checked += 1
    assert checked >= 10


# A measured figure: a time in ms or µs, a memory growth in MiB or GB, a
# fractional time or size (a limit or a default is a round number: `16 KB`,
# `30 s`). The manual links to tests/benchmark/README.md instead.
_MEASURED = re.compile(r"\d\s?(?:ms|µs|GB)\b|\d\s?MiB\b|\d\.\d+\s?(?:s|MB)\b")
_LIMITS = ("1 MiB", "64 MiB", "0.5 s")   # an answer kept for a replay, the suite's file, a token's re-read


def test_benchmark_figures_are_beside_the_benchmark_not_in_the_manual():
    found = []
    for page in PAGES:
        text = re.sub(r"`[^`]*`", "", prose(page.read_text(encoding="utf-8")))
        for limit in _LIMITS:
            text = text.replace(limit, "")
        found += [f"{page.name}: {' '.join(text[max(0, m.start() - 40):m.end()].split())}"
                  for m in _MEASURED.finditer(text)]
    assert not found, found
