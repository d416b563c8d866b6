"""Export formats of a list, search or predefined query (data/transfer/export.py
reads the rows): CSV, NDJSON and one JSON array, as UTF-8 chunks.

NDJSON lines and the JSON array's items are the entity texts the JSON list
writes. A CSV row holds the same values, read from the same loaded rows a
column at a time: each cell is its JSON value's text as the row writer's
value writers (data/answer/rawvalues.py) write it, without the quotes of a
JSON string (numbers exactly as written, ``true`` / ``false``, enum constant
names, empty for null or absent; text as stored), through the reports' CSV
writer and its formula-injection guard. The columns are the attributes the
JSON answer has for this caller, in the plan's order after ``id``: embedded
values and to-one references as dotted columns (``address.city``,
``customer.id``); collections and structured (``json``) values only in the
JSON forms.
"""
import json
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .data.answer.rawvalues import id_writer, plain_text, raw_writer, value_writer
from .data.answer.rowwriters import positions, shows_reference
from .data.read.rows import RawRows, Values
from .data.transfer.export import Export, entity_texts, json_arrays, row_chunks
from .reports.cells import guarded_texts
from .reports.runner import csv_lines

if TYPE_CHECKING:
    from .data.access import Access
    from .data.datamanager import DataManager
    from .model.fetchplan import FetchPlan
    from .model.metadata import MetaClass, MetaProperty
    from .security.roles import Permissions

CSV, NDJSON, JSON_ARRAY = "csv", "ndjson", "json"
CONTENT_TYPES = {CSV: "text/csv;charset=UTF-8", NDJSON: "application/x-ndjson",
                 JSON_ARRAY: "application/json;charset=UTF-8"}
FILE_EXTENSIONS = {CSV: "csv", NDJSON: "ndjson", JSON_ARRAY: "json"}


def export_chunks(data: "DataManager", access: "Access", export: Export,
                  form: str) -> Iterator[bytes]:
    """The export in ``form`` (CSV, NDJSON, JSON_ARRAY) as UTF-8 chunks."""
    if form == NDJSON:
        return (("\n".join(texts) + "\n").encode("utf-8")
                for texts in entity_texts(data, access, export))
    if form == JSON_ARRAY:
        return _json_array(json_arrays(data, access, export))
    return _csv(data, access, export)


def _json_array(arrays: Iterator[str]) -> Iterator[bytes]:
    """The chunks' arrays as one array."""
    separator = "["
    for array in arrays:
        yield (separator + array[1:-1]).encode("utf-8")
        separator = ","
    yield b"[]" if separator == "[" else b"]"


def _csv(data: "DataManager", access: "Access", export: Export) -> Iterator[bytes]:
    """Each chunk of loaded rows as rows of cells, made a column at a time."""
    paths = list(_paths(export.meta, export.plan, access.permissions, ()))
    columns = [_column(export.meta, path, guarded) for path, guarded in paths]

    def rows() -> Iterator[list[tuple[str | None, ...]]]:
        for chunk in row_chunks(data, access, export):
            yield list(zip(*[column(chunk, chunk) for column in columns]))
    return csv_lines([".".join(path) for path, _ in paths], rows())


# One column of a chunk: (the rows it is read from, None where a reference is
# null or unseen; the loaded rows they belong to) -> its cells.
Column = Callable[["Sequence[Values | None]", RawRows], "list[str | None]"]


def _column(meta: "MetaClass", path: tuple[str, ...], guarded: bool) -> Column:
    """The cells of ``path`` (``id``, ``name``, ``address.city``, ``customer.name``)."""
    prop = meta.properties[path[0]]
    if len(path) > 1 and prop.is_reference:     # the referenced rows, by foreign key
        below, name = _column(prop.related, path[1:], guarded), path[0]

        def referenced(values: "Sequence[Values | None]", rows: RawRows) -> "list[str | None]":
            targets = rows.targets.get(name)
            if targets is None:
                return [None] * len(values)
            at, found = positions(rows)[name], targets.by_key.get
            return below([None if row is None else found(row[at]) for row in values],
                         targets.rows)
        return referenced
    name = ".".join(path)
    if len(path) > 1:                           # a part of an embedded value
        prop = prop.related.properties[path[1]]
    write = _value_writer(prop, name == "id")

    def column(values: "Sequence[Values | None]", rows: RawRows) -> "list[str | None]":
        at = positions(rows).get(name)
        if at is None:
            return [None] * len(values)
        cells: list[Any] = list(map(itemgetter(at), values)) if values is rows else \
            [None if row is None else row[at] for row in values]
        if write is not None:       # JSON text, a string's without its quotes
            cells = [None if value is None else write(value) for value in cells]
            cells = [text if text is None or text[:1] != '"' else
                     text[1:-1] if "\\" not in text else json.loads(text) for text in cells]
        return list(guarded_texts(cells)) if guarded else cells
    return column


def _value_writer(prop: "MetaProperty", is_id: bool) -> "Callable[[Any], str | None] | None":
    """A loaded value (not None) -> its JSON text, as the row writer writes
    it; None where the stored text is the cell (plain text)."""
    if is_id:
        return id_writer(prop)
    if prop.getter is not None:                 # worked out while loading: a Python value
        return value_writer(prop)
    return None if plain_text(prop) else raw_writer(prop)


def _paths(meta: "MetaClass", plan: "FetchPlan", permissions: "Permissions",
           prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], bool]]:
    """(key path, whether its cells pass the formula guard) of each column, as
    the row writer decides what it writes (rowwriters.py): the id always, an
    attribute when visible, a reference when its entity is readable too, an
    embedded value's part when ``name.part`` is visible."""
    levels = permissions.attribute_levels(meta.name)
    yield (*prefix, "id"), True
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        if name == "id" or not levels.get(name) or prop.is_collection:
            continue
        if prop.is_reference:
            if nested is not None and prop.target is not None \
                    and shows_reference(meta, prop, permissions):
                yield from _paths(prop.target, nested, permissions, (*prefix, name))
        elif prop.is_embedded:
            if nested is not None and prop.target is not None:
                for part in nested.properties:
                    guarded = _guarded(prop.target.properties[part])
                    if levels.get(f"{name}.{part}") and guarded is not None:
                        yield (*prefix, name, part), guarded
        else:
            guarded = _guarded(prop)
            if guarded is not None:
                yield (*prefix, name), guarded


def _guarded(prop: "MetaProperty") -> bool | None:
    """Whether a property's cells pass the formula guard: text does (also enum
    names, dates, and any value of an attribute without a datatype); numbers
    and booleans do not; None: no column (structured ``json`` values)."""
    kind = getattr(prop.datatype, "kind", None)
    if prop.meta_enum is not None or prop.datatype is None:
        return True
    if kind == "json":
        return None
    return kind not in ("number", "boolean")
