"""Running a report: each band's rows through the data manager, in batches,
written as CSV (a stream of chunks) or XLSX (a temporary file).

Columns the caller may not see (an attribute it may not view, or an entity
on the path it may not read) are left out of the output entirely, header
included; rows hidden by row-level roles never come back from the data
manager; a reference hidden that way is an empty cell.
"""
import csv
import io
import itertools
import operator
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, cast

from ..data.bound import DataAccess
from ..data.read.filters import attribute_visible
from ..data.answer.names import instance_namer
from . import values
from .cells import CellValue, Row, guarded_text, guarded_texts
from .parameters import filter_for, run_error
from .xlsx import Workbook, XColumn

if TYPE_CHECKING:
    from ..data.access import Access
    from ..data.datamanager import DataManager
    from ..model.metadata import MetaClass, MetaProperty
    from ..security.roles import Permissions
    from .definitions import Column, Template, TemplateBand
    from .parameters import Bound

Batch = list[Row]

BATCH_ROWS = 5000           # rows per database read: fewer queries, still a few MiB
CONTENT_TYPES = {"CSV": "text/csv;charset=UTF-8",
                 "XLSX": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
_FILE_NAME_UNSAFE = str.maketrans({c: "_" for c in '/\\:*?"<>|' + "".join(map(chr, range(32)))})


@dataclass(frozen=True)
class OutputColumn:
    """One column of a sheet or CSV file. Cells are worked out a batch and a
    column at a time, which keeps most of the per-cell work in C (map,
    itemgetter, dict.get) rather than in a Python call per cell."""
    caption: str
    values: Callable[[Batch], list[CellValue]]  # batch of rows -> cell values (None: empty)
    text: Callable[[CellValue], str]    # value -> CSV text; guarded_text for text columns
    kind: str = "auto"           # XLSX cell kind
    number_format: str | None = None

    def texts(self, cells: list[CellValue]) -> list[str]:
        """A batch of this column's values as CSV texts."""
        if self.text is guarded_text:
            return guarded_texts(cells)
        text = self.text
        return ["" if value is None else text(value) for value in cells]


@dataclass
class Document:
    file_name: str
    content_type: str
    chunks: Iterator[bytes] | None = None  # CSV
    file: IO[bytes] | None = None          # XLSX: a temporary file, positioned at 0
    size: int | None = None


# A sheet: its title, its columns and its rows a batch at a time.
SheetBand = tuple[str, list[OutputColumn], Iterator[Batch]]


class Run:
    """One run of one template for one caller."""

    def __init__(self, access: "Access", data: "DataManager", captions: Callable[[str], str],
                 max_rows: int, on_rows: Callable[[int], None] | None = None) -> None:
        self.access = access
        self.data = data
        self.captions = captions     # key -> localized caption
        self.max_rows = max_rows
        self.on_rows = on_rows       # called with each batch's row count, as it is written

    def document(self, template: "Template", bound: "Bound") -> Document:
        bands: list[SheetBand] = [(band.title, self.columns(band), self.rows(band, bound)) for band in template.bands]
        name = template.file_name.format_map({k: v or "" for k, v in bound.text.items()})
        file_name = (name.translate(_FILE_NAME_UNSAFE).strip() or "report") + "." + \
            template.output_type.lower()
        content_type = CONTENT_TYPES[template.output_type]
        if template.output_type == "CSV":
            return Document(file_name, content_type, chunks=csv_chunks(*bands[0][1:]))
        file = tempfile.TemporaryFile(prefix="restsvc-report-")
        try:
            write_xlsx(file, bands)
            size = file.tell()
            file.seek(0)
        except BaseException:
            file.close()
            raise
        return Document(file_name, content_type, file=file, size=size)

    # -- rows ----------------------------------------------------------------
    def rows(self, template_band: "TemplateBand", bound: "Bound") -> Iterator[Batch]:
        """The band's rows in batches. Entity bands are counted first, so the
        row limit, the read permission and the filter are checked before any
        output is written."""
        batches = self._batches(template_band, bound)
        return batches if self.on_rows is None else _counted(batches, self.on_rows)

    def _batches(self, template_band: "TemplateBand", bound: "Bound") -> Iterator[Batch]:
        band = template_band.band
        if band.function is not None:
            rows = band.function(dict(bound.python), DataAccess(self.data, self.access))
            return _batched(iter(rows or ()))
        spec = filter_for(band.filter, bound)
        entity = cast("MetaClass", band.entity)      # a band without a function reads an entity
        total = self.data.count(self.access, entity, spec)
        if total > self.max_rows:
            raise run_error(f"The report has {total} rows in band {band.name}; at most "
                            f"{self.max_rows} are allowed (svc.reports.max-rows)")
        batches: Iterator[Batch] = self.data.batches(
            self.access, entity, template_band.plan, spec, band.sort, BATCH_ROWS)
        return batches

    # -- columns -------------------------------------------------------------
    def columns(self, template_band: "TemplateBand") -> list[OutputColumn]:
        if template_band.band.entity is None:
            return [OutputColumn(c.caption or _keys(c)[-1], column_values(walker(_keys(c))),
                                 values.python_text, "auto", c.format)
                    for c in template_band.columns]
        built = (self._entity_column(c) for c in template_band.columns)
        return [column for column in built if column is not None]

    def _entity_column(self, column: "Column") -> OutputColumn | None:
        permissions = self.access.permissions
        path = cast("tuple[MetaProperty, ...]", column.path)     # an entity band's
        if not may_view(permissions, path):
            return None
        last = path[-1]
        caption = column.caption or self.captions(f"{last.owner.name}.{last.name}")
        walk = walker(tuple(prop.name for prop in path))
        if last.is_reference:
            return OutputColumn(caption, column_values(walk, instance_namer(last.related, permissions)),
                                guarded_text, "string")
        if last.meta_enum is not None:
            members = last.meta_enum.enum_class
            captions = {m: self.captions(f"{last.meta_enum.name}.{m.name}") for m in members}
            return OutputColumn(caption, lambda batch: list(map(captions.get, map(walk, batch))),
                                guarded_text, "string")
        return OutputColumn(caption, column_values(walk), values.text_form(last), values.cell_kind(last),
                            column.format or values.decimal_format(last))


def may_view(permissions: "Permissions", path: "tuple[MetaProperty, ...]") -> bool:
    """Whether the caller may see the value at the end of ``path``: the rule
    filters and sorts follow (``data/filters.attribute_visible``) at every
    step. An embedded value's attribute is the owning entity's
    ``address.city`` (as in answers); a reference needs its target readable."""
    owner = None
    for prop in path:
        if not attribute_visible(permissions, prop.owner, prop.name, owner):
            return False
        owner = (prop.owner.name, prop.name) if prop.is_embedded else None
    return True


def _keys(column: "Column") -> tuple[str, ...]:
    """A function band's column path: keys of its rows' dicts."""
    return cast("tuple[str, ...]", column.path)


def walker(names: Sequence[str]) -> Callable[[Row], CellValue]:
    """row -> the value at a key path through nested dicts (None when absent)."""
    if len(names) == 1:
        return operator.methodcaller("get", names[0])
    if len(names) == 2:
        outer, inner = names

        def walk_two(row: Row) -> CellValue:
            value = row.get(outer)
            return value.get(inner) if isinstance(value, dict) else None
        return walk_two

    def walk(row: Row) -> CellValue:
        value: CellValue = row
        for name in names:
            value = value.get(name) if isinstance(value, dict) else None
        return value
    return walk


def column_values(walk: Callable[[Row], CellValue],
                  convert: Callable[[CellValue], CellValue] | None = None,
                  ) -> Callable[[Batch], list[CellValue]]:
    """batch -> the column's values: ``walk`` of each row, then ``convert``
    of the values that are not None."""
    if convert is None:
        return lambda batch: list(map(walk, batch))
    return lambda batch: [None if value is None else convert(value) for value in map(walk, batch)]


def _counted(batches: Iterable[Batch], on_rows: Callable[[int], None]) -> Iterator[Batch]:
    for batch in batches:
        on_rows(len(batch))
        yield batch


def _batched(rows: Iterator[Row]) -> Iterator[Batch]:
    while True:
        batch = list(itertools.islice(rows, BATCH_ROWS))
        if not batch:
            return
        yield batch


# -- writers -------------------------------------------------------------------
def csv_chunks(columns: Sequence[OutputColumn], batches: Iterable[Batch]) -> Iterator[bytes]:
    """The CSV document a batch at a time: a header of captions, then one
    line per row, as UTF-8 bytes."""
    return csv_lines([c.caption for c in columns],
                     (zip(*[column.texts(column.values(batch)) for column in columns])
                      for batch in batches))


def csv_lines(header: Iterable[str],
              row_batches: Iterable[Iterable[Sequence[str | None]]]) -> Iterator[bytes]:
    """RFC 4180 CSV as UTF-8 bytes, a batch of rows (sequences of cell texts,
    None for empty) at a time: the header (guarded) on line 1, CRLF line ends,
    cells quoted when they hold a comma, quote or line break."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([guarded_text(caption) for caption in header])
    for rows in row_batches:
        writer.writerows(rows)
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def write_xlsx(file: IO[bytes], bands: Iterable[SheetBand]) -> None:
    """One sheet per band: (title, columns, batches)."""
    with Workbook(file) as book:
        for title, columns, batches in bands:
            sheet = book.add_sheet(title, [XColumn(c.caption, c.kind, c.number_format)
                                           for c in columns])
            sheet.write_rows(row for batch in batches
                             for row in zip(*[column.values(batch) for column in columns]))

