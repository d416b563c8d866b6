"""Our own small XLSX writer: the zip and the XML of SpreadsheetML, nothing else.

    with Workbook(binary_file) as book:
        sheet = book.add_sheet("Orders", [XColumn("Number", "string"),
                                          XColumn("Date", "date"),
                                          XColumn("Amount", "number", "#,##0.00")])
        sheet.write_rows(rows)          # any iterable of sequences, streamed

Cells are typed by their column's kind: ``string`` (inline strings),
``number`` (int, float, Decimal), ``boolean``, ``date``, ``datetime`` and
``time`` (spreadsheet serial numbers with a number format, so they are real
dates), or ``auto`` (chosen per value by its Python type). None is an empty
cell. Every sheet gets a bold, frozen header row, an auto-filter over its
rows and column widths from the header and the first rows.

Rows are written to the zip entry as they come, a block at a time, so memory
does not depend on the number of rows; only the zip's directory, the styles
and the workbook part are written at the end. Sheets are written one after
the other (adding a sheet finishes the previous one).
"""
import datetime
import decimal
import re
import zipfile
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import IO

from .cells import CellValue, clean_text, is_formula_like

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml"

DEFAULT_FORMATS = {"date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm:ss", "time": "hh:mm:ss"}
# Number formats every spreadsheet program knows by id (ECMA-376 18.8.30).
_BUILT_IN_FORMATS = {"General": 0, "0": 1, "0.00": 2, "#,##0": 3, "#,##0.00": 4}
_EPOCH_ORDINAL = datetime.date(1899, 12, 30).toordinal()
_SAMPLE_ROWS = 100          # rows that decide the column widths
_BLOCK_ROWS = 500           # rows per write to the zip entry
_MAX_WIDTH = 60
KINDS = ("string", "number", "boolean", "date", "datetime", "time", "auto")


@dataclass(frozen=True)
class XColumn:
    caption: str
    kind: str = "auto"
    number_format: str | None = None    # an Excel number format code; dates get a default one
    width: float | None = None          # characters; None: from the header and the first rows


def _escape(text: str) -> str:
    """Cleaned, XML-escaped text (for attributes too)."""
    return _markup(clean_text(text)).replace('"', "&quot;")


def _markup(text: str) -> str:
    """XML-escaped text; CR as a character reference so that it survives
    XML's line-end normalization."""
    if "&" in text or "<" in text or ">" in text or "\r" in text:
        return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                .replace("\r", "&#13;"))
    return text


# Text that needs none of _inline's care, found with one search: most cells.
_NEEDS_CARE = re.compile("\\A[=+\\-@\\s]|\\s\\Z|[&<>\r\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _inline(ref: str, text: str, styles: tuple[str, str]) -> str:
    text = clean_text(text)
    style = styles[1] if is_formula_like(text) else styles[0]   # [1]: quotePrefix, kept as text
    escaped = _markup(text)
    if text[:1].isspace() or text[-1:].isspace():
        return f'<c r="{ref}"{style} t="inlineStr"><is><t xml:space="preserve">{escaped}</t></is></c>'
    return f'<c r="{ref}"{style} t="inlineStr"><is><t>{escaped}</t></is></c>'


def _serial_date(value: datetime.date) -> int:
    return value.toordinal() - _EPOCH_ORDINAL


def _serial_datetime(value: datetime.datetime) -> float:
    seconds = value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6
    return value.toordinal() - _EPOCH_ORDINAL + seconds / 86400


def _serial_time(value: datetime.time | datetime.datetime) -> float:
    return (value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6) / 86400


def _number_text(value: int | float | decimal.Decimal) -> str | None:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None         # no spreadsheet number can hold it
        return repr(value)
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        return None
    return str(value)


class _Styles:
    """Cell formats (cellXfs) by (number format, bold, quote prefix), added as
    columns need them; written once the workbook is complete."""

    def __init__(self) -> None:
        self.formats: dict[str, int] = {}         # custom format code -> id (164 and up)
        self.xfs: dict[tuple[int, bool, bool], int] = {(0, False, False): 0}

    def index(self, number_format: str | None = None, bold: bool = False,
              quote_prefix: bool = False) -> int:
        format_id = 0
        if number_format:
            built_in = _BUILT_IN_FORMATS.get(number_format)
            format_id = built_in if built_in is not None \
                else self.formats.setdefault(number_format, 164 + len(self.formats))
        return self.xfs.setdefault((format_id, bold, quote_prefix), len(self.xfs))

    def xml(self) -> str:
        formats = "".join(f'<numFmt numFmtId="{i}" formatCode="{_escape(code)}"/>'
                          for code, i in self.formats.items())
        xfs = "".join(
            f'<xf numFmtId="{fmt}" fontId="{int(bold)}" fillId="0" borderId="0" xfId="0"'
            + (' applyNumberFormat="1"' if fmt else "") + (' applyFont="1"' if bold else "")
            + (' quotePrefix="1"' if quote else "") + "/>"
            for (fmt, bold, quote) in self.xfs)
        return (f'{_HEAD}<styleSheet xmlns="{_MAIN}">'
                + (f'<numFmts count="{len(self.formats)}">{formats}</numFmts>' if formats else "")
                + '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font>'
                '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
                '<fills count="2"><fill><patternFill patternType="none"/></fill>'
                '<fill><patternFill patternType="gray125"/></fill></fills>'
                '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
                '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
                f'<cellXfs count="{len(self.xfs)}">{xfs}</cellXfs>'
                '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
                '</styleSheet>')


def column_letters(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _style_attr(index: int) -> str:
    return f' s="{index}"' if index else ""


class _Cell:
    """How one column writes its cells: a function of (reference, value)."""

    def __init__(self, kind: str, number_format: str | None, styles: _Styles) -> None:
        number_format = number_format or DEFAULT_FORMATS.get(kind)
        self.kind = kind
        self.style = _style_attr(styles.index(number_format))
        self.text_styles = (self.style, _style_attr(styles.index(number_format, quote_prefix=True)))
        self.date_styles = {k: _style_attr(styles.index(number_format or f))
                            for k, f in DEFAULT_FORMATS.items()}
        self.write: Callable[[str, CellValue], str] = getattr(self, "_" + kind)

    def _string(self, ref: str, value: CellValue) -> str:
        if not isinstance(value, str):
            value = str(value)
        if _NEEDS_CARE.search(value) is None:
            return f'<c r="{ref}"{self.style} t="inlineStr"><is><t>{value}</t></is></c>'
        return _inline(ref, value, self.text_styles)

    def _number(self, ref: str, value: CellValue) -> str:
        if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
            return self._auto(ref, value)
        text = _number_text(value)
        return "" if text is None else f'<c r="{ref}"{self.style}><v>{text}</v></c>'

    def _boolean(self, ref: str, value: CellValue) -> str:
        return f'<c r="{ref}"{self.style} t="b"><v>{int(bool(value))}</v></c>'

    def _date(self, ref: str, value: CellValue) -> str:
        if isinstance(value, datetime.datetime):
            return f'<c r="{ref}"{self.style}><v>{_serial_datetime(value)}</v></c>'
        return f'<c r="{ref}"{self.style}><v>{_serial_date(value)}</v></c>'

    def _datetime(self, ref: str, value: CellValue) -> str:
        return f'<c r="{ref}"{self.style}><v>{_serial_datetime(value)}</v></c>'

    def _time(self, ref: str, value: CellValue) -> str:
        return f'<c r="{ref}"{self.style}><v>{_serial_time(value)}</v></c>'

    def _auto(self, ref: str, value: CellValue) -> str:
        if isinstance(value, bool):
            return self._boolean(ref, value)
        if isinstance(value, (int, float, decimal.Decimal)):
            text = _number_text(value)
            return "" if text is None else f'<c r="{ref}"{self.style}><v>{text}</v></c>'
        if isinstance(value, datetime.datetime):
            return f'<c r="{ref}"{self.date_styles["datetime"]}><v>{_serial_datetime(value)}</v></c>'
        if isinstance(value, datetime.date):
            return f'<c r="{ref}"{self.date_styles["date"]}><v>{_serial_date(value)}</v></c>'
        if isinstance(value, datetime.time):
            return f'<c r="{ref}"{self.date_styles["time"]}><v>{_serial_time(value)}</v></c>'
        return self._string(ref, str(value))


def _width(column: XColumn, samples: Sequence[Sequence[CellValue]], index: int) -> float:
    if column.width is not None:
        return column.width
    if column.kind in ("date", "datetime", "time") and column.number_format is None:
        longest = {"date": 10, "datetime": 19, "time": 8}[column.kind]
    else:
        longest = max((len(str(row[index])) for row in samples
                       if index < len(row) and row[index] is not None), default=0)
    # The header is bold and has the filter button beside it.
    return min(max(longest, len(column.caption) + 3, 6) + 2, _MAX_WIDTH)


def sheet_title(title: str, taken: Container[str]) -> str:
    """A title Excel accepts: at most 31 characters, none of []:*?/\\, unique."""
    cleaned = "".join("_" if c in "[]:*?/\\" else c for c in clean_text(title)).strip("' ")
    cleaned = cleaned[:31] or "Sheet"
    candidate, number = cleaned, 1
    while candidate.lower() in taken:
        number += 1
        suffix = f" ({number})"
        candidate = cleaned[:31 - len(suffix)] + suffix
    return candidate


class Sheet:
    def __init__(self, book: "Workbook", number: int, title: str, columns: Iterable[XColumn]) -> None:
        self.book = book
        self.number = number
        self.title = title
        self.columns = tuple(columns)
        self.rows = 1                # the header
        self._cells = [_Cell(c.kind, c.number_format, book.styles) for c in self.columns]
        self._letters = [column_letters(i) for i in range(len(self.columns))]
        self._stream = book.zip.open(f"xl/worksheets/sheet{number}.xml", "w", force_zip64=True)
        self._started = False

    def write_rows(self, rows: Iterable[Sequence[CellValue]]) -> None:
        rows = iter(rows)
        if not self._started:
            samples: list[Sequence[CellValue]] = []
            for row in rows:
                samples.append(row)
                if len(samples) >= _SAMPLE_ROWS:
                    break
            self._start(samples)
            self._write(samples)
        block: list[Sequence[CellValue]] = []
        for row in rows:
            block.append(row)
            if len(block) >= _BLOCK_ROWS:
                self._write(block)
                block = []
        if block:
            self._write(block)

    def _start(self, samples: Sequence[Sequence[CellValue]]) -> None:
        self._started = True
        bold = _style_attr(self.book.styles.index(bold=True))
        cols = "".join(f'<col min="{i + 1}" max="{i + 1}" width="{_width(c, samples, i)}" customWidth="1"/>'
                       for i, c in enumerate(self.columns))
        header = "".join(f'<c r="{letter}1"{bold} t="inlineStr"><is><t>{_escape(c.caption)}</t></is></c>'
                         for letter, c in zip(self._letters, self.columns))
        self._stream.write((
            f'{_HEAD}<worksheet xmlns="{_MAIN}" xmlns:r="{_REL}">'
            '<sheetViews><sheetView workbookViewId="0"' + (' tabSelected="1"' if self.number == 1 else "")
            + '><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
            '<selection pane="bottomLeft" activeCell="A2" sqref="A2"/></sheetView></sheetViews>'
            '<sheetFormatPr defaultRowHeight="15"/>'
            + (f"<cols>{cols}</cols>" if cols else "")
            + f'<sheetData><row r="1">{header}</row>').encode("utf-8"))

    def _write(self, rows: Iterable[Sequence[CellValue]]) -> None:
        parts: list[str] = []
        number = self.rows
        pairs = list(zip(self._letters, self._cells))
        for row in rows:
            number += 1
            cells = [cell.write(f"{letter}{number}", value)
                     for (letter, cell), value in zip(pairs, row) if value is not None]
            parts.append(f'<row r="{number}">{"".join(cells)}</row>')
        self.rows = number
        if parts:
            self._stream.write("".join(parts).encode("utf-8"))

    @property
    def filter_range(self) -> str | None:
        """The auto-filter's range in A1 form, or None for a sheet without columns."""
        if not self.columns:
            return None
        return f"$A$1:${self._letters[-1]}${self.rows}"

    def close(self) -> None:
        if not self._started:
            self._start([])
        tail = "</sheetData>"
        if self.filter_range:
            tail += f'<autoFilter ref="{self.filter_range.replace("$", "")}"/>'
        tail += ('<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" '
                 'footer="0.3"/></worksheet>')
        self._stream.write(tail.encode("utf-8"))
        self._stream.close()


class Workbook:
    """An XLSX document written to a binary file object (seekable or not)."""

    def __init__(self, file: IO[bytes], compresslevel: int = 1) -> None:
        # Level 1: most of deflate's size gain at a fraction of its time.
        self.zip = zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel)
        self.styles = _Styles()
        self.styles.index(bold=True)
        self.sheets: list[Sheet] = []
        self._open: Sheet | None = None

    def add_sheet(self, title: str, columns: Sequence[XColumn]) -> Sheet:
        if self._open is not None:
            self._open.close()
        for column in columns:
            if column.kind not in KINDS:
                raise ValueError(f"unknown cell kind {column.kind!r}")
        title = sheet_title(title, {s.title.lower() for s in self.sheets})
        self._open = Sheet(self, len(self.sheets) + 1, title, columns)
        self.sheets.append(self._open)
        return self._open

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None
        if not self.sheets:
            self.add_sheet("Sheet", []).close()
        self._write_parts()
        self.zip.close()

    def __enter__(self) -> "Workbook":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.zip.close()

    def _write_parts(self) -> None:
        sheets = self.sheets
        count = len(sheets)
        self.zip.writestr("[Content_Types].xml", (
            f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPE}.sheet.main+xml"/>'
            f'<Override PartName="/xl/styles.xml" ContentType="{_TYPE}.styles+xml"/>'
            + "".join(f'<Override PartName="/xl/worksheets/sheet{s.number}.xml" '
                      f'ContentType="{_TYPE}.worksheet+xml"/>' for s in sheets)
            + "</Types>"))
        self.zip.writestr("_rels/.rels", (
            f'{_HEAD}<Relationships xmlns="{_PKG_REL}"><Relationship Id="rId1" '
            f'Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'))
        self.zip.writestr("xl/_rels/workbook.xml.rels", (
            f'{_HEAD}<Relationships xmlns="{_PKG_REL}">'
            + "".join(f'<Relationship Id="rId{s.number}" Type="{_REL}/worksheet" '
                      f'Target="worksheets/sheet{s.number}.xml"/>' for s in sheets)
            + f'<Relationship Id="rId{count + 1}" Type="{_REL}/styles" Target="styles.xml"/>'
            "</Relationships>"))
        names = "".join(
            f'<definedName name="_xlnm._FilterDatabase" localSheetId="{s.number - 1}" hidden="1">'
            f"{_escape(_quoted(s.title))}!{s.filter_range}</definedName>"
            for s in sheets if s.filter_range)
        self.zip.writestr("xl/workbook.xml", (
            f'{_HEAD}<workbook xmlns="{_MAIN}" xmlns:r="{_REL}">'
            '<bookViews><workbookView/></bookViews><sheets>'
            + "".join(f'<sheet name="{_escape(s.title)}" sheetId="{s.number}" r:id="rId{s.number}"/>'
                      for s in sheets)
            + "</sheets>" + (f"<definedNames>{names}</definedNames>" if names else "")
            + "</workbook>"))
        self.zip.writestr("xl/styles.xml", self.styles.xml())


def _quoted(title: str) -> str:
    return "'" + title.replace("'", "''") + "'"
