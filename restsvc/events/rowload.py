"""The rows a batch of events is judged on (matching.py ``Verdicts``): the
values of the filters' paths of the rows of the batch's events, in one query
per entity and batch.

The query goes through ``EntityQuery``'s joins (a referenced row the reader
may not see is a missing one, as in a search). Its SQL is made by Peewee
once per ``Statements`` (kept with the paths, ``matching.read_paths``: the
subscribers of one set, reading rows alike) and number of ids, and run again
with the ids of the next batch: a batch of one event then costs its
statement, not building it (about 0.5 ms of Peewee per batch).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import peewee

from ..data.read.query import EntityQuery
from ..data.ids import id_or_none
from ..db import execute

if TYPE_CHECKING:
    from ..data.access import Access
    from ..model.metadata import MetaClass, MetaProperty

Row = Mapping[str, Any]        # a row's values by dotted attribute path
Path = tuple["MetaProperty", ...]
KEPT = 8                       # statements kept per ``Statements`` (numbers of ids)


class _Statement(NamedTuple):
    select: peewee.ModelSelect[Any]     # what reads its rows (Peewee's conversions)
    sql: str
    params: list[Any]
    spots: list[int]                    # where the ids go in ``params``


class Statements:
    """The statements of ``load`` made so far for one set of paths, by
    number of ids and whether only visible rows are read."""
    __slots__ = ("made",)

    def __init__(self) -> None:
        self.made: dict[tuple[int, bool], _Statement] = {}


def load(access: Access, meta: MetaClass, ids: Iterable[Any], paths: Mapping[str, Path],
         visible_only: bool = False, statements: Statements | None = None) -> dict[str, Row]:
    """{id: the values of ``paths``} of the rows ``ids`` of ``meta`` still
    stored (soft-deleted ones too), in one query; a referenced row the caller
    may not see gives no values. ``visible_only``: only rows of ``meta`` the
    caller's row-level roles let it see. ``statements``: where the statement
    is kept for the next call with the same access, meta and paths."""
    keys = list({key for key in (id_or_none(meta, str(value)) for value in ids)
                 if key is not None})
    if not keys:
        return {}
    names = list(paths)
    made = None if statements is None else statements.made.get((len(keys), visible_only))
    if made is None:
        made = _statement(access, meta, paths, names, len(keys), visible_only)
        if statements is not None:
            if len(statements.made) >= KEPT:
                statements.made.clear()
            statements.made[(len(keys), visible_only)] = made
    params = list(made.params)
    convert = meta.model.id.db_value
    for spot, key in zip(made.spots, keys):
        params[spot] = convert(key)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    cursor = execute(access.database, made.sql, params)
    # Peewee's reading of a cursor, with its conversion of each column.
    wrapper = made.select._get_cursor_wrapper(cursor)  # type: ignore[attr-defined, unused-ignore]  # peewee-stubs: private
    rows = cast("Iterable[tuple[Any, ...]]", wrapper)
    return {str(meta.row_id(row[0])): dict(zip(names, row[1:])) for row in rows}


class _Mark:
    """Where an id goes, in the parameters of a statement being made."""
    __slots__ = ()


def _statement(access: Access, meta: MetaClass, paths: Mapping[str, Path], names: list[str],
               count: int, visible_only: bool) -> _Statement:
    query = EntityQuery(meta, access, with_deleted=True)
    columns = [query.column(paths[name]) for name in names]
    model = meta.model
    marks = [_Mark() for _ in range(count)]
    condition = model.id.in_([peewee.Value(mark, converter=False) for mark in marks])
    restricted = query.row_condition(meta) if visible_only else None
    if restricted is not None:
        condition = condition & restricted
    select = cast("peewee.ModelSelect[Any]",
                  query.apply_joins(model.select(model.id, *columns)).where(condition)).tuples()
    sql, params = select.sql()
    spots = {id(param): spot for spot, param in enumerate(params)}
    return _Statement(select, sql, list(params), [spots[id(mark)] for mark in marks])


def stored(prop: MetaProperty, value: Any) -> Any:
    """``value`` (parsed from JSON) as a loaded row holds it: through the
    column and back, so a filter's constant and a row's value compare alike."""
    field = prop.field
    return None if value is None else field.python_value(field.db_value(value))


def _references(paths: Mapping[str, Path]) -> dict[str, tuple[Path, dict[str, Path]]]:
    """The references the paths go through at their first step beyond the
    row's own columns: dotted reference -> (its path, {dotted rest: rest})."""
    found: dict[str, tuple[Path, dict[str, Path]]] = {}
    for path in paths.values():
        for position, prop in enumerate(path[:-1]):
            if prop.is_reference:
                head = path[:position + 1]
                rest = path[position + 1:]
                entry = found.setdefault(".".join(p.name for p in head), (head, {}))
                entry[1][".".join(p.name for p in rest)] = rest
                break
    return found


def referred(paths: Mapping[str, Path], earlier: Iterable[dict[str, Any]]
              ) -> dict[str, tuple[Path, list[Any], dict[str, Path]]]:
    """For each reference the paths go through: the ids the rows before refer to."""
    referred: dict[str, tuple[Path, list[Any], dict[str, Path]]] = {}
    for ref, (head, rest) in _references(paths).items():
        ids = list({values[ref] for values in earlier if values.get(ref) is not None})
        if ids:
            referred[ref] = (head, ids, rest)
    return referred


def row_before(meta: MetaClass, paths: Mapping[str, Path], after: Row | None,
            values: dict[str, Any], targets: dict[str, dict[str, Row]]) -> Row:
    """The row before a change: ``after`` (None: a deleted row) with the
    change's ``previous`` ``values``."""
    row = dict(after or {})
    for dotted, path in paths.items():
        head = next((position for position, prop in enumerate(path[:-1]) if prop.is_reference),
                    None)
        if head is None:
            if dotted in values:
                raw = values[dotted]
                prop = path[-1]
                row[dotted] = None if raw is None else stored(prop, prop.value_type.from_json(raw))
            continue
        ref = ".".join(prop.name for prop in path[:head + 1])
        if ref in values:
            rest = ".".join(prop.name for prop in path[head + 1:])
            target = targets.get(ref, {}).get(str(values[ref])) if values[ref] is not None else None
            row[dotted] = None if target is None else target.get(rest)
    return row
