"""Export formats of a list, search or predefined query (data/transfer/export.py
reads the rows): CSV, NDJSON and one JSON array, as UTF-8 chunks.

NDJSON lines and the JSON array's items are the entity texts the JSON list
writes. A CSV row holds the same values: each chunk's JSON is read back and
every cell is its JSON value's text (numbers exactly as written, ``true`` /
``false``, enum constant names, empty for null or absent), through the
reports' CSV writer and its formula-injection guard. The columns are the
attributes the JSON answer has for this caller, in the plan's order after
``id``: embedded values and to-one references as dotted columns
(``address.city``, ``customer.id``); collections and structured (``json``)
values only in the JSON forms.
"""
import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from .data.transfer.export import Export, entity_texts, json_arrays
from .data.answer.rowwriters import shows_reference
from .model.datatypes import DATATYPES
from .data.answer.generated import Generated
from .reports.cells import guarded_text
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

# Numbers as their JSON text (no float or Decimal in between): a cell shows
# exactly what the JSON answer says.
_CELLS = json.JSONDecoder(parse_float=str, parse_int=str)
_BOOLEAN_TEXT = DATATYPES["boolean"].to_text     # true / false


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
    """Each chunk's JSON array read back into rows of cells. A cell's value is
    the JSON value; only booleans and values without a datatype need a text
    form of their own, and text is guarded only in a chunk whose JSON text
    holds a string the guard would change (one search of the chunk's text)."""
    paths = list(_paths(export.meta, export.plan, access.permissions, ()))
    row_of = _row_reader([path for path, _ in paths])
    guarded = [index for index, (_, text) in enumerate(paths) if text is guarded_text]
    converted = [(index, text) for index, (_, text) in enumerate(paths)
                 if text is not guarded_text and text is not str]

    def rows() -> Iterator[list[list[Any]]]:
        for array in json_arrays(data, access, export):
            batch = [row_of(entity) for entity in _CELLS.decode(array)]
            for index, text in converted:
                for row in batch:
                    if row[index] is not None:
                        row[index] = text(row[index])
            if guarded and _may_need_guard(array):
                for row in batch:
                    for index in guarded:
                        if row[index] is not None:
                            row[index] = guarded_text(row[index])
            yield batch
    return csv_lines([".".join(path) for path, _ in paths], rows())


# Where a string value of JSON text may start as a formula or hold a
# character the guard removes (json escapes controls, \b and \f; lone
# surrogates and U+FFFE/U+FFFF are written as they are). False alarms only
# cost the per-cell path.
_GUARD_ALARMS = ('"=', '"+', '"-', '"@', '"\\t', '"\\r', "\\u000", "\\u001", "\\b", "\\f")
_UNWRITABLE = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _may_need_guard(text: str) -> bool:
    """Substring tests and one character class: far faster over a long text
    than one expression with alternatives (as reports/cells.py finds)."""
    return any(alarm in text for alarm in _GUARD_ALARMS) or \
        not text.isascii() and _UNWRITABLE.search(text) is not None


def _row_reader(paths: list[tuple[str, ...]]) -> Callable[[dict[str, Any]], list[Any]]:
    """entity (parsed JSON) -> the list of its values at ``paths`` (None where
    absent), generated once per export: one call per row."""
    source = Generated(empty={})
    cells = []
    for path in paths:
        expression = f"e.get({source.const(path[0])})"
        for name in path[1:]:
            expression = f"({expression} or empty).get({source.const(name)})"
        cells.append(expression)
    return cast(Callable[[dict[str, Any]], list[Any]],
                source.function("e", [f"    return [{', '.join(cells)}]"], "<export row reader>"))


def _paths(meta: "MetaClass", plan: "FetchPlan", permissions: "Permissions",
           prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Callable[[Any], str]]]:
    """(key path, cell text) of each column, as the row writer decides what
    it writes (rowwriters.py): the id always, an attribute when visible, a
    reference when its entity is readable too, an embedded value's part
    when ``name.part`` is visible."""
    levels = permissions.attribute_levels(meta.name)
    yield (*prefix, "id"), _cell_text(meta.properties["id"]) or guarded_text
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
                    text = _cell_text(prop.target.properties[part])
                    if levels.get(f"{name}.{part}") and text is not None:
                        yield (*prefix, name, part), text
        else:
            text = _cell_text(prop)
            if text is not None:
                yield (*prefix, name), text


def _cell_text(prop: "MetaProperty") -> Callable[[Any], str] | None:
    """JSON value -> cell text for a property's values (None: no column).
    Text passes the formula guard (also enum names, dates: harmless there);
    numbers come as their JSON text already."""
    datatype = prop.datatype
    if prop.meta_enum is not None:
        return guarded_text
    if datatype is None:
        return _any_text
    kind = getattr(datatype, "kind", None)
    if kind == "json":
        return None
    if kind == "number":
        return str
    if kind == "boolean":
        return _BOOLEAN_TEXT
    return guarded_text


def _any_text(value: Any) -> str:
    """A value of an attribute without a datatype (a transient one's)."""
    if isinstance(value, bool):
        return _BOOLEAN_TEXT(value)
    if isinstance(value, str):
        return guarded_text(value)
    return guarded_text(json.dumps(value, separators=(",", ":")))
