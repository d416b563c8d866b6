"""Loaded rows as Python values, for Python code (services' data access,
reports, ``select_by_id``).

The loader gives every read the same rows: the database's value tuples
(``flatrows.RawRows``) with what was loaded for them. Answers write them as
they are (data/answer/rowwriters.py); ``records`` converts them once for
code that computes with them: a dict per row keyed by attribute name, each
value converted as its column's converter says (``columns.converter``: dates,
decimals, enum members), an embedded value as a dict (None when all its
parts are), a to-one reference as the referenced row's dict (None when the
caller cannot see it), a composition or many-to-many attribute as the list
of the rows the caller sees, a transient attribute as its getter worked it
out. A reference to an entity the caller may not read is left out. A row
that several rows refer to is one dict they share.
"""
from operator import itemgetter
from collections.abc import Sequence
from typing import Any

from ..columns import convert_rows
from .nestedrows import PARENT, embedded_references
from .rows import RawRows, Values

# A row converted for Python code: attribute name -> its Python value.
Record = dict[str, Any]


def records(rows: RawRows) -> list[Record]:
    """The rows of one load as Python values (see the module's text)."""
    return _Converter().convert(rows)


class _Converter:
    """Converts the rows of one load, each level's rows once (``done``: by
    the id of their RawRows, aligned with them)."""

    def __init__(self) -> None:
        self.done: dict[int, list[Record]] = {}

    def convert(self, rows: RawRows) -> list[Record]:
        found = self.done.get(id(rows))
        if found is None:
            found = self.done[id(rows)] = self._convert(rows)
        return found

    def _by_values(self, rows: Sequence[Values]) -> dict[int, Record]:
        """id(a row's value tuple) -> its dict (none where nothing was loaded)."""
        if not isinstance(rows, RawRows):
            return {}
        return dict(zip(map(id, rows), self.convert(rows)))

    def _convert(self, rows: RawRows) -> list[Record]:
        names = rows.names
        converted: list[Record] = convert_rows(rows, names, rows.converting)
        meta, plan = rows.meta, rows.loading
        if PARENT in names:
            for row in converted:
                del row[PARENT]
        embedded = [name for name, nested in plan.properties.items()
                    if nested is not None and meta.properties[name].is_embedded]
        for name in embedded:
            parts = [column for column in names if column.startswith(f"{name}.")]
            for row in converted:
                value = {column[len(name) + 1:]: row.pop(column) for column in parts}
                row[name] = value if any(item is not None for item in value.values()) else None
        for name, nested in plan.properties.items():
            prop = meta.properties[name]
            if nested is not None and prop.is_reference:
                self._reference(rows, converted, name)
        for column, _, _ in embedded_references(meta, plan):
            self._embedded_reference(rows, converted, column)
        for position, name in enumerate(rows.transients, len(names)):
            for values, row in zip(rows, converted):
                row[name] = values[position]
        return converted

    def _embedded_reference(self, rows: RawRows, converted: list[Record], column: str) -> None:
        """A reference inside an embedded value (``address.country``), in its dict."""
        owner, _, part = column.partition(".")
        loaded = rows.targets.get(column)
        if loaded is None:          # its entity is not readable
            for row in converted:
                if row[owner] is not None:
                    row[owner].pop(part, None)
            return
        by_values, by_key = self._by_values(loaded[0]), loaded[1]
        position = rows.names.index(column)
        for values, row in zip(rows, converted):
            value = row[owner]
            if value is not None and values[position] is not None:
                target = by_key.get(values[position])
                value[part] = None if target is None else by_values[id(target)]

    def _reference(self, rows: RawRows, converted: list[Record], name: str) -> None:
        """One reference attribute's values: rows, lists of rows, or left out
        (its entity is not readable: nothing was loaded for it)."""
        if name in rows.targets:
            loaded, by_key = rows.targets[name]
            by_values = self._by_values(loaded)
            position = rows.names.index(name)
            for values, row in zip(rows, converted):
                target = None if values[position] is None else by_key.get(values[position])
                row[name] = None if target is None else by_values[id(target)]
        elif name in rows.children:
            loaded, groups = rows.children[name]
            by_values = self._by_values(loaded)
            for values, row in zip(rows, converted):
                row[name] = [by_values[id(kid)] for kid in groups.get(values[0], ())]
        elif name in rows.members:
            lists, members = rows.shown_members(name)
            by_values = self._by_values(members)
            text_of = itemgetter(rows.names.index(name))
            for values, row in zip(rows, converted):
                row[name] = [by_values[id(member)] for member in lists.get(text_of(values), ())]
        else:
            for row in converted:
                row.pop(name, None)
