"""What a transient attribute's getter sees as ``self``: a view of one loaded
row (rows.py), the one way Python code reads a row without converting all of it.

The loaded values are attributes, each converted as the loader converts it
when read; an embedded value is a dict (None when all its parts are); the
referenced rows, composition children and many-to-many members the caller
sees are views too; anything the plan did not load, or whose entity the
caller may not read, comes from the stored entity (loaded at the first such
access). Read-only. One view class per entity and set of loaded columns.
"""
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..columns import converter, row_id
from ..memo import Memo, Owned, owned
from .rows import Converter, RawRows, Values

if TYPE_CHECKING:
    from ...model.metadata import MetaClass

# View classes, one per entity and set of loaded columns (inline plans choose them).
_VIEWS: "Memo[Owned[MetaClass, type[RawView]]]" = Memo("raw views", 1024)


class RawView:
    """A view of one row of ``_rows`` (its values ``_values``)."""

    __slots__ = ("_rows", "_values", "_stored")
    _view_meta: "MetaClass"
    _rows: RawRows
    _values: Values
    _stored: object

    def __getattr__(self, name: str) -> Any:        # not loaded
        return getattr(self._entity(), name)

    def _entity(self) -> object:
        if self._stored is None:
            meta = self._view_meta
            self._stored = meta.model.get_by_id(row_id(meta)(self._values))
        return self._stored


def seen(rows: RawRows, values: Values) -> RawView:
    """A view of ``values``, one of ``rows``."""
    return viewer(rows)(values)


def seen_all(rows: RawRows, many: Iterable[Values]) -> list[RawView]:
    """Views of ``many``, each one of ``rows`` (no ``viewer`` made for a few)."""
    view_type = _view_of(rows)
    made = []
    for values in many:
        view = _new(view_type)
        view._rows, view._values, view._stored = rows, values, None
        made.append(view)
    return made


def viewer(rows: RawRows) -> Callable[[Values], RawView]:
    """values (one of ``rows``) -> its view, made without ``__init__``, which
    costs three times as much."""
    view_type = _view_of(rows)

    def view(values: Values) -> RawView:
        made = _new(view_type)
        made._rows, made._values, made._stored = rows, values, None
        return made
    return view


_new = object.__new__


def _view_of(rows: RawRows) -> "type[RawView]":
    """The view class of ``rows``, kept on them."""
    view: type[RawView] | None = rows.view
    if view is None:
        view = rows.view = view_class(rows.meta, rows.names)
    return view


def view_class(meta: "MetaClass", names: tuple[str, ...]) -> "type[RawView]":
    """The view class of rows of ``meta`` with the loaded columns ``names``."""
    return owned(_VIEWS, meta, tuple(names), lambda: _view_class(meta, names))


Getter = Callable[[RawView], Any]


def _view_class(meta: "MetaClass", names: tuple[str, ...]) -> "type[RawView]":
    namespace: dict[str, object] = {"__slots__": (), "_view_meta": meta}
    embedded: dict[str, list[tuple[str, int, Converter | None]]] = {}
    for position, name in enumerate(names):
        owner, dot, part = name.partition(".")
        prop = meta.properties.get(owner)
        if prop is None or prop.getter is not None:
            continue
        if dot:
            field = prop.related.properties[part].field
            embedded.setdefault(owner, []).append((part, position, converter(field)))
        elif prop.link is not None:
            namespace[name] = property(_members(name, position))
        elif prop.is_reference:
            namespace[name] = property(_reference(name, position))
        else:
            namespace[name] = property(_value(position, converter(prop.field)))
    for name, parts in embedded.items():
        namespace[name] = property(_embedded(parts))
    for name, prop in meta.properties.items():
        if prop.getter is not None:
            namespace[name] = property(_stored(name))
        elif prop.is_collection and prop.back_field is not None:
            namespace[name] = property(_composition(name))
    return type(f"{meta.name}RawView", (RawView,), namespace)


def _stored(name: str) -> Getter:
    return lambda self: getattr(self._entity(), name)


def _value(position: int, convert: Converter | None) -> Getter:
    if convert is None:
        return lambda self: self._values[position]

    def get(self: RawView) -> Any:
        value = self._values[position]
        return value if value is None else convert(value)
    return get


def _embedded(parts: list[tuple[str, int, Converter | None]]) -> Getter:
    """The embedded value as Python code sees it: a dict, None when all its parts are."""
    def get(self: RawView) -> dict[str, Any] | None:
        values = self._values
        value = {part: values[position] if values[position] is None or convert is None
                 else convert(values[position]) for part, position, convert in parts}
        return value if any(item is not None for item in value.values()) else None
    return get


def _reference(name: str, position: int) -> Getter:

    def get(self: RawView) -> Any:
        loaded = self._rows.targets.get(name)
        if loaded is None:          # not loaded: its entity is not readable
            return getattr(self._entity(), name)
        key = self._values[position]
        found = None if key is None else loaded.by_key.get(key)
        return None if found is None else seen(loaded.rows, found)
    return get


def _members(name: str, position: int) -> Getter:

    def get(self: RawView) -> Any:
        if name not in self._rows.members:          # its entity is not readable
            return getattr(self._entity(), name)
        lists, members = self._rows.shown_members(name)
        shown = lists[self._values[position]]
        if not shown or not isinstance(members, RawRows):
            return []
        return seen_all(members, shown)
    return get


def _composition(name: str) -> Getter:

    def get(self: RawView) -> Any:
        loaded = self._rows.children.get(name)
        if loaded is None:          # not in the plan, or its entity is not readable
            return getattr(self._entity(), name)
        kids = loaded.groups.get(self._values[0])
        if not kids:
            return []
        return seen_all(loaded.rows, kids)
    return get
