"""Our own XLSX writer, read back with openpyxl cell by cell."""
import datetime
import decimal
import io
import zipfile

import openpyxl
import pytest

from restsvc.reports.xlsx import Workbook, XColumn, column_letters

COLUMNS = [XColumn("Name", "string"), XColumn("Amount", "number", "#,##0.00"),
           XColumn("Day", "date"), XColumn("At", "datetime"), XColumn("Time", "time"),
           XColumn("Paid", "boolean"), XColumn("Anything")]
ROWS = [
    ["Ada", decimal.Decimal("12.50"), datetime.date(2024, 1, 31),
     datetime.datetime(2024, 1, 31, 13, 45, 10), datetime.time(8, 30, 15), True, 7],
    ["  spaced  ", -3, None, datetime.datetime(1999, 12, 31, 23, 59, 59), None, False,
     datetime.date(2020, 2, 29)],
    ["a & b < c > d \"q\" 'x'", 1e-7, datetime.date(1900, 3, 1), None, datetime.time(0, 0),
     None, "text"],
]


def write(sheets):
    buffer = io.BytesIO()
    with Workbook(buffer) as book:
        for title, columns, rows in sheets:
            book.add_sheet(title, columns).write_rows(rows)
    buffer.seek(0)
    return buffer


def test_cells_read_back_with_their_types_and_formats():
    book = openpyxl.load_workbook(write([("Data", COLUMNS, ROWS)]))
    sheet = book["Data"]
    got = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert got[0] == [c.caption for c in COLUMNS]
    expected_times = [datetime.time(8, 30, 15), None, datetime.time(0, 0)]
    for row, source, time in zip(got[1:], ROWS, expected_times):
        assert row[0] == source[0]
        assert row[1] == pytest.approx(float(source[1]))
        assert row[2] == (None if source[2] is None else datetime.datetime.combine(source[2], datetime.time()))
        assert row[3] == source[3]
        assert row[4] == time
        assert row[5] == source[5]
    assert got[1][6] == 7 and got[2][6] == datetime.datetime(2020, 2, 29) and got[3][6] == "text"
    assert sheet["B2"].number_format == "#,##0.00"
    assert sheet["C2"].number_format == "yyyy-mm-dd" and sheet["C2"].is_date
    assert sheet["D2"].number_format == "yyyy-mm-dd hh:mm:ss"
    assert sheet["E2"].number_format == "hh:mm:ss"
    assert sheet["G3"].number_format == "yyyy-mm-dd"          # auto: a date gets a date format
    assert sheet["F2"].data_type == "b" and sheet["B2"].data_type == "n"


def test_header_is_bold_and_frozen_with_an_auto_filter_and_widths():
    sheet = openpyxl.load_workbook(write([("Data", COLUMNS, ROWS)]))["Data"]
    assert all(cell.font.b for cell in sheet[1])
    assert not sheet["A2"].font.b
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:G4"
    widths = {letter: dim.width for letter, dim in sheet.column_dimensions.items()}
    assert widths["A"] >= len(ROWS[2][0])          # the longest value fits
    assert widths["D"] >= 19                         # a date-time fits
    assert all(8 <= width <= 62 for width in widths.values())


def test_one_sheet_per_band_with_names_excel_accepts():
    book = openpyxl.load_workbook(write([
        ("Orders", [XColumn("N", "number")], [[1], [2]]),
        ("Orders", [XColumn("N", "number")], [[3]]),
        ("a/b:c*d?[e]" + "x" * 40, [XColumn("S", "string")], []),
    ]))
    assert book.sheetnames[:2] == ["Orders", "Orders (2)"]
    assert len(book.sheetnames[2]) == 31 and not set("/\\:*?[]") & set(book.sheetnames[2])
    assert [c.value for c in book["Orders (2)"]["A"]] == ["N", 3]
    assert book.worksheets[2].max_row == 1


def test_formula_like_text_stays_text():
    values = ["=1+2", "+SUM(A1:A3)", "-2+3", "@cmd", "\tTab", "\rCR", "=HYPERLINK(\"x\")", "plain"]
    buffer = write([("S", [XColumn("V", "string")], [[v] for v in values])])
    sheet = openpyxl.load_workbook(buffer)["S"]
    cells = [row[0] for row in sheet.iter_rows(min_row=2)]
    assert [c.value for c in cells] == values
    assert all(c.data_type == "s" for c in cells)               # never a formula
    assert [c.quotePrefix for c in cells] == [True] * 7 + [False]
    with zipfile.ZipFile(buffer) as archive:
        assert b"<f>" not in archive.read("xl/worksheets/sheet1.xml")


def test_characters_xml_cannot_carry_are_removed():
    sheet = openpyxl.load_workbook(write([
        ("S\x01", [XColumn("Cap\x02tion", "string")], [["a\x00b\x0bc\x1fd\ud800e\uffffé€😀"]])]))["S"]
    assert sheet["A1"].value == "Caption"
    assert sheet["A2"].value == "abcdeé€😀"


def test_many_columns_and_rows_stream_to_a_non_seekable_file():
    class Pipe(io.RawIOBase):
        """Write-only and not seekable, like a socket."""
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += b
            return len(b)

    pipe = Pipe()
    columns = [XColumn(f"C{i}", "number") for i in range(30)]
    with Workbook(pipe) as book:
        book.add_sheet("Wide", columns).write_rows([i * 30 + j for j in range(30)] for i in range(1200))
    sheet = openpyxl.load_workbook(io.BytesIO(bytes(pipe.data)), read_only=True)["Wide"]
    rows = list(sheet.iter_rows(values_only=True))
    assert len(rows) == 1201 and rows[-1][-1] == 1199 * 30 + 29 and rows[0][29] == "C29"


def test_column_letters():
    assert [column_letters(i) for i in (0, 25, 26, 51, 701, 702)] == ["A", "Z", "AA", "AZ", "ZZ", "AAA"]
