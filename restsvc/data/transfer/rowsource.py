"""An import's body, CSV or NDJSON, as (line number, entity JSON) pairs.

Read from an iterator of byte chunks, one row at a time: memory holds one
chunk and one row, whatever the size of the body. CSV columns have the shape
an export writes: attribute names, ``id``, ``version``, to-one references as
``customer.id`` or ``customer.<naturalKey>``, embedded values as
``address.city``, many-to-many members as ``tags[0].id``; cells in each
datatype's text form (model/datatypes.py), enum constant names, ``true`` /
``false``, an empty cell null. An NDJSON line is one entity's JSON as the
Entities API reads it. A row that cannot be read is handed on as its
violations (the line stays the caller's to report); a body that cannot be
read at all raises BadRequest.
"""
import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...errors import BadRequest, PayloadTooLarge, Text, invalid_value
from ...jsonio import loads
from ...model.valuetypes import MAX_ARRAY_ITEMS
from ...security.roles import VIEW

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty
    from ..access import Access

FORMATS = ("csv", "ndjson")
INVALID = "{restsvc.validation.InvalidValue}"
# One row (a CSV record, an NDJSON line) is at most this many characters.
MAX_ROW_CHARS = 1 << 20
_COLUMN = re.compile(r"([A-Za-z_$][A-Za-z0-9_$]*)(?:\[(\d{1,6})\])?\Z")

Row = tuple[int, "dict[str, Any] | list[dict[str, Any]]"]
Cell = Callable[[str], Any]


def violation(path: str, message: str, value: object = None) -> dict[str, Any]:
    """One error in the shape of the Entities API's validation errors."""
    if not isinstance(value, (str, int, float, bool)):
        value = None
    return {"message": message, "messageTemplate": INVALID, "path": path, "invalidValue": value}


class _Chunks(io.RawIOBase):
    """A binary stream over byte chunks (for io.TextIOWrapper)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = chunk
        size = min(len(buffer), len(self._left))
        buffer[:size] = self._left[:size]
        self._left = self._left[size:]
        return size


def _text(chunks: Iterable[bytes]) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedReader(_Chunks(chunks), 1 << 16),
                            encoding="utf-8-sig", newline="")


def rows(fmt: str, chunks: Iterable[bytes], access: "Access", meta: "MetaClass") -> Iterator[Row]:
    """(line, entity JSON) per row; (line, [violations]) for a row that cannot be read."""
    text = _text(chunks)
    try:
        yield from (_csv_rows(text, access, meta) if fmt == "csv" else _ndjson_rows(text))
    except UnicodeDecodeError:
        raise BadRequest("Malformed import body", "The body is not UTF-8 text") from None


def _ndjson_rows(text: io.TextIOWrapper) -> Iterator[Row]:
    line = 0
    while True:
        raw = text.readline(MAX_ROW_CHARS + 1)
        if not raw:
            return
        line += 1
        if len(raw) > MAX_ROW_CHARS:
            raise _row_too_long(line)
        if not raw.strip():
            continue
        try:
            body = loads(raw)
        except (ValueError, RecursionError):
            yield line, [violation("", "The line is not a JSON value")]
            continue
        if not isinstance(body, dict):
            yield line, [violation("", "The line is not a JSON object (one entity)")]
            continue
        yield line, body


def _row_too_long(line: int) -> PayloadTooLarge:
    return PayloadTooLarge("Import row too large",
                           f"Line {line} is longer than {MAX_ROW_CHARS} characters")


def _csv_rows(text: io.TextIOWrapper, access: "Access", meta: "MetaClass") -> Iterator[Row]:
    reader = csv.reader(text, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = [_column(access, meta, name.strip()) for name in header]
        if len(set(header)) < len(header):
            raise BadRequest("Malformed CSV", "The header names a column twice")
        start = reader.line_num + 1
        for record in reader:
            line, start = start, reader.line_num + 1
            if not any(record):
                continue
            if len(record) != len(columns):
                yield line, [violation("", f"The row has {len(record)} cells, the header "
                                           f"{len(columns)}")]
                continue
            yield line, _body(columns, record)
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise _row_too_long(reader.line_num) from None
        raise BadRequest("Malformed CSV", f"Line {reader.line_num}: {exc}") from None


class _Column:
    """Where a CSV column's cell goes in the entity JSON (``path``), how it is
    read (``cell``), and its ``kind``: value, ref (the last step is the key of
    a reference) or member (``tags[0].id``)."""

    def __init__(self, name: str, path: tuple[Any, ...], cell: Cell, kind: str = "value") -> None:
        self.name, self.path, self.cell, self.kind = name, path, cell, kind


def _body(columns: list[_Column], record: list[str]) -> "dict[str, Any] | list[dict[str, Any]]":
    body: dict[str, Any] = {}
    members: dict[str, dict[int, dict[str, Any]]] = {}
    errors = []
    for column, text in zip(columns, record):
        path = column.path
        if column.kind == "member":
            if text != "":
                members.setdefault(path[0], {}).setdefault(path[1], {})[path[2]] = text
            else:
                members.setdefault(path[0], {})
            continue
        if text == "" and column.kind == "ref":
            _put(body, path[:-1], None, keep=True)      # no reference
            continue
        try:
            value = None if text == "" else column.cell(text)
        except (ValueError, TypeError, ArithmeticError) as exc:
            errors.append(violation(column.name, str(exc) or "invalid value", text))
            continue
        _put(body, path, value)
    if errors:
        return errors
    for name, found in members.items():
        body[name] = [found[index] for index in sorted(found)]
    return body


def _put(body: dict[str, Any], path: tuple[Any, ...], value: Any, keep: bool = False) -> None:
    """Set ``value`` at ``path``; ``keep``: unless another column put something there."""
    target = body
    for step in path[:-1]:
        found = target.get(step)
        if not isinstance(found, dict):
            found = target[step] = {}
        target = found
    if not keep or target.get(path[-1]) is None:
        target[path[-1]] = value


def _column(access: "Access", meta: "MetaClass", name: str) -> _Column:
    """A header's column; 400 for one the entity does not have or the caller cannot see."""
    unknown = BadRequest("Unknown column", Text(
        "unknownImportColumn", "{entity} has no attribute for the column {column}",
        entity=meta.name, column=name))
    levels = access.permissions.attribute_levels(meta.name)
    if name in ("id", "version"):
        return _Column(name, (name,), str if name == "id" else _whole)
    steps = name.split(".")
    first = _COLUMN.match(steps[0])
    prop = meta.properties.get(first.group(1)) if first else None
    if prop is None or levels.get(prop.name, 0) < VIEW or not prop.persistent:
        raise unknown
    member = first.group(2) if first else None
    if prop.link is not None:          # many-to-many: tags[0].id
        if member is None or len(steps) != 2 or int(member) >= MAX_ARRAY_ITEMS:
            raise unknown
        return _Column(name, (prop.name, int(member), _key(prop.related, steps[1], unknown)), str,
                       "member")
    if member is not None or prop.is_collection:
        raise unknown
    if prop.is_reference:              # customer.id, customer.email
        if len(steps) != 2:
            raise unknown
        return _Column(name, (prop.name, _key(prop.related, steps[1], unknown)), str, "ref")
    if prop.is_embedded:               # address.city, address.country.id
        part = prop.related.properties.get(steps[1]) if len(steps) > 1 else None
        if part is None or levels.get(f"{prop.name}.{part.name}", 0) < VIEW:
            raise unknown
        if part.is_reference and len(steps) == 3:
            return _Column(name, (prop.name, part.name, _key(part.related, steps[2], unknown)),
                           str, "ref")
        if part.is_reference or len(steps) != 2:
            raise unknown
        return _Column(name, (prop.name, part.name), _cell(part))
    if len(steps) != 1:
        raise unknown
    return _Column(name, (prop.name,), _cell(prop))


def _key(target: "MetaClass", name: str, unknown: BadRequest) -> str:
    if name != "id" and name != getattr(target, "natural_key", None):
        raise unknown
    return name


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("must be a whole number") from None


def _cell(prop: "MetaProperty") -> Cell:
    """A cell's text -> the attribute's JSON form (what the planner reads)."""
    datatype = prop.datatype
    if prop.meta_enum is not None or datatype is None:
        return str      # enum constant names, file references: as written

    def read(text: str) -> Any:
        try:
            return datatype.to_json(datatype.from_text(text))
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise ValueError(str(invalid_value(prop.type_name, exc))) from None
    return read
