"""What every report cell goes through, whatever the output format: text
XML cannot carry is removed, and text a spreadsheet would run as a formula
is recognized so each writer can make it show as text."""
import re
from collections.abc import Iterable
from typing import Any

# A cell's value as a band gives it: any Python value of a datatype or an
# enum, or whatever an application's band function put in its rows (None:
# an empty cell). A row: its values by attribute name or key.
CellValue = Any
Row = dict[str, CellValue]

# XML 1.0 allows tab, LF, CR and everything from U+0020 except lone
# surrogates and U+FFFE/U+FFFF. Removed from CSV cells too: a CSV file is
# usually opened in the same spreadsheet programs.
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

# A cell starting with one of these runs as a formula in Excel, LibreOffice
# and Google Sheets (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Either problem, found with one search (most cells have neither).
_CSV_UNSAFE = re.compile("\\A[=+\\-@\t\r]|[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry."""
    if _ILLEGAL_XML.search(text):
        return _ILLEGAL_XML.sub("", text)
    return text


def is_formula_like(text: str) -> bool:
    return text.startswith(FORMULA_START)


def guarded_text(text: str) -> str:
    """CSV form of a text value: cleaned, and prefixed with an apostrophe when
    a spreadsheet would otherwise evaluate it (the apostrophe is how
    spreadsheet programs themselves mark "this is text")."""
    if _CSV_UNSAFE.search(text) is None:
        return text
    text = clean_text(text)
    return "'" + text if text.startswith(FORMULA_START) else text


# A formula-like cell start inside a batch of cells joined by newlines (a
# newline inside a cell can only add false alarms, which the per-cell path
# then settles). Substring tests and one character class: far faster than
# one regular expression with alternatives over a long text.
_CELL_STARTS = tuple("\n" + c for c in FORMULA_START)


def guarded_texts(values: Iterable[str | None]) -> list[str]:
    """``guarded_text`` of a batch of text values (None: empty), with a few
    scans of the whole batch in the usual case that no cell needs it."""
    texts = ["" if value is None else value for value in values]
    joined = "\n".join(texts)
    if (joined.startswith(FORMULA_START) or any(start in joined for start in _CELL_STARTS)
            or _ILLEGAL_XML.search(joined)):
        return [guarded_text(text) for text in texts]
    return texts
