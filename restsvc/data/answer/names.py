"""Instance names: the one namer of an entity's rows, per caller's permissions.

An entity's instance name joins the texts of its ``instance_name``
attributes (a reference's part is the referenced row's own instance name);
without them it is ``Entity-<id>``. A caller that may not view one of the
attributes gets no instance name (None): a name built from a hidden value
would tell it. ``instance_namer`` names a row of Python values (records.py,
the written values of a create); ``raw_namer`` a row of database values, as
the row writers hold it.
"""
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..columns import converter, row_id

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ...security.roles import Permissions

NAMES = "\0names"       # texts[(NAMES, name)]: foreign key -> the referenced row's instance name

# A row by attribute name -> its instance name, or None.
Namer = Callable[[Mapping[str, Any]], "str | None"]
# (database values, texts spliced in by the row writers) -> the instance name, or None.
RawNamer = Callable[..., "str | None"]


def instance_namer(meta: "MetaClass", permissions: "Permissions",
                   named_references: bool = False) -> Namer:
    """row -> instance name, worked out once per entity and permissions (kept
    with the permissions, which live as long as their role combination).
    ``named_references``: the row holds a referenced row's instance name
    where it would hold the row (``raw_namer``)."""
    namers: dict[str, Namer] = permissions.memo.setdefault(
        "instance_namers_named" if named_references else "instance_namers", {})
    namer = namers.get(meta.name)
    if namer is None:
        namer = namers[meta.name] = _build_namer(meta, permissions, named_references)
    return namer


def _build_namer(meta: "MetaClass", permissions: "Permissions", named_references: bool) -> Namer:
    if not meta.instance_name:
        prefix = f"{meta.name}-"
        return lambda row: prefix + str(row["id"])
    levels = permissions.attribute_levels(meta.name)
    if not all(levels.get(name) for name in meta.instance_name):
        return lambda row: None
    getters: list[tuple[str, Callable[[Any], Any]]] = []
    for name in meta.instance_name:
        prop = meta.properties[name]
        if prop.is_reference:
            getters.append((name, _named if named_references
                            else _reference_namer(prop.related, permissions)))
        else:
            assert prop.json_value is not None, prop.name     # a datatype's: it has a text
            getters.append((name, prop.json_value))

    if len(getters) == 1:
        (single_name, convert), = getters

        def single(row: Mapping[str, Any]) -> str | None:
            value = row.get(single_name)
            if value is not None:
                value = convert(value)
            return None if value is None else str(value)
        return single

    def joined(row: Mapping[str, Any]) -> str | None:
        texts = []
        for name, convert in getters:
            value = row.get(name)
            if value is not None:
                value = convert(value)
                if value is not None:
                    texts.append(str(value))
        return " ".join(texts) if texts else None
    return joined


def _named(name: str) -> str:
    return name


def _reference_namer(target: "MetaClass", permissions: "Permissions") -> Callable[[Any], Any]:
    """The referenced row's instance name, its namer looked up at the first
    call (instance names may refer to each other)."""
    found: list[Namer] = []

    def name_of(row: Mapping[str, Any]) -> str | None:
        if not found:
            found.append(instance_namer(target, permissions))
        return found[0](row)
    return name_of


class _Part(NamedTuple):
    """One instance-name attribute as ``raw_namer`` reads it from a row of database values."""
    name: str
    position: int | None                    # its column's, None: not loaded
    convert: Callable[[Any], Any] | None    # its column's converter
    names: tuple[str, str] | None           # a reference's: where its rows' names are


def raw_namer(meta: "MetaClass", permissions: "Permissions", index: Mapping[str, int]) -> RawNamer:
    """(values, texts) -> the instance name (a Python text), or None when the
    entity has none or a part of it is hidden; ``index``: a column's position
    in ``values``. A reference's part is the name its row has (``texts``)."""
    if not meta.instance_name:
        namer, read_id = instance_namer(meta, permissions), row_id(meta)
        return lambda values, texts=None: namer({"id": read_id(values)})
    namer = instance_namer(meta, permissions, named_references=True)
    parts = []
    for name in meta.instance_name:
        prop = meta.properties[name]
        convert = None if prop.field is None or prop.is_reference else converter(prop.field)
        parts.append(_Part(name, index.get(name), convert,
                           (NAMES, name) if prop.is_reference else None))

    def name_of(values: tuple[Any, ...], texts: Mapping[Any, Any] | None = None) -> str | None:
        row = {}
        for part in parts:
            value = None if part.position is None else values[part.position]
            if value is not None:
                if part.names is not None:      # not loaded when its entity is not readable
                    found = texts.get(part.names) if texts else None
                    value = None if found is None else found.get(value)
                elif part.convert is not None:
                    value = part.convert(value)
            row[part.name] = value
        return namer(row)
    return name_of
