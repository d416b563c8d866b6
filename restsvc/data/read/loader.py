"""Loading entity graphs along a fetch plan.

Rows are the database's value tuples (flatrows.RawRows): answers write them
as they are, Python code converts them (records.py). One query loads the root rows;
each reference in the plan costs one more query for all rows at once (never
one per row): a many-to-many association's link keys come with the owners'
rows and its members are loaded by id (members.py). References to entities
the caller may not read are left out; referenced rows hidden by row-level
roles become null (to-one) or are absent (collections).
"""
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import peewee

from ...db import is_sqlite, list_param, read_rows
from ...model.fetchplan import ids_only
from ..memo import Memo, Owned, owned, plan_facts
from ..columns import among, conversions, converter, key_type, row_id, stored
from .cursors import after_key
from .members import member_column
from .flatrows import NESTED, fill_flat_members, raw_kind
from .rows import Converter, Key, RawRows
from .filters import Node
from .nestedrows import PARENT as _PARENT, fill_nested, readable
from ..answer.rowwriters import shows_reference
from .query import EntityQuery, filter_shape
from .textsearch import SNIPPET, TextSearch, ranked, search_parameters
from .request import PLAIN, By, Load

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass
    from ..access import Access

Field = Any     # a Peewee field, or an expression a statement selects
_CHUNK = 500        # keys per statement when loading referenced rows


def loading_plan(plan: "FetchPlan") -> "FetchPlan":
    """The plan plus what ``_instanceName`` needs, at every level (cached on the plan)."""
    facts = plan_facts(plan)
    known: "FetchPlan | None" = facts.loading
    if known is not None:
        return known
    merged = dict(plan.properties)
    extra = plan.entity.fetch_plans["_instance_name"]
    for name, nested in extra.properties.items():
        if name not in merged:
            merged[name] = nested
    properties = {name: (loading_plan(nested) if nested is not None else None)
                  for name, nested in merged.items()}
    result = type(plan)(plan.name, plan.entity, properties)
    plan_facts(result).loading = facts.loading = result
    return result


@dataclass(frozen=True, slots=True)
class Columns:
    """What the root statement of a loading plan selects, worked out once per
    plan and kind of database (``columns_of``)."""
    selected: list[tuple[str, Field]]   # (attribute name, peewee field or expression)
    names: tuple[str, ...]              # the selected names, in order
    converting: list[tuple[int, Converter]]     # (position, converter) of the values converted
    signature: str                      # the columns, as the SQL cache tells shapes apart


_COLUMNS: "Memo[Owned[Any, Columns]]" = Memo("loader.columns", 2048)


def columns_of(meta: "MetaClass", plan: "FetchPlan", database: peewee.Database) -> Columns:
    """The ``Columns`` of a loading plan: the id, the entity's own columns and
    its embedded values' (``address.city``), then its many-to-many
    attributes, each selected as its link keys (members.py)."""
    return owned(_COLUMNS, plan, is_sqlite(database), lambda: _columns(meta, plan, database))


def _columns(meta: "MetaClass", plan: "FetchPlan", database: peewee.Database) -> Columns:
    model: Any = meta.model     # a Peewee model: its fields are class attributes
    columns: list[tuple[str, Field]] = [("id", model.id)]
    links = []
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        if name != "id" and prop.persistent and prop.field is not None and not prop.is_collection:
            columns.append((name, prop.field))
        elif prop.is_embedded and nested is not None:
            embedded = prop.related.properties
            columns += [(f"{name}.{part}", embedded[part].field) for part in nested.properties
                        if embedded[part].field is not None]
        elif prop.link is not None:
            links.append((name, member_column(database, prop)))
    converters = [converter(field) for _, field in columns] + [None] * len(links)
    columns += links
    return Columns(columns, tuple(name for name, _ in columns), conversions(converters),
                   f"{meta.name}:{','.join(name for name, _ in columns)}")


def visible_ids(access: "Access", meta: "MetaClass", keys: Collection[Key]) -> set[Key]:
    """Which of ``keys`` name rows of ``meta`` the caller's row-level roles let it see."""
    model: Any = meta.model     # a Peewee model: its fields are class attributes
    return set(map(row_id(meta), _by_ids(access, meta, ids_only(meta), model.id, keys)))


def select_rows(access: "Access", meta: "MetaClass", plan: "FetchPlan", load: Load) -> RawRows:
    """Rows of ``meta`` matching ``load``'s filter, the caller's row-level roles
    and keys, loaded along ``plan`` (already a loading plan), counted against
    the load's budget: the database's value tuples and what was loaded for
    them (flatrows.RawRows). Soft-deleted rows are left out unless the caller
    asked for them or ``load.with_deleted``."""
    shape = columns_of(meta, plan, access.database)
    columns, names, converting, signature = \
        shape.selected, shape.names, shape.converting, shape.signature
    parent_column, budget = load.parent_column, load.budget
    if parent_column is not None:
        converting = converting + conversions([None] * len(columns) + [converter(parent_column)])
        columns = columns + [(_PARENT, parent_column)]
        names = names + (_PARENT,)
        signature += f"+{parent_column.model._meta.table_name}.{parent_column.name}"
    if load.search is not None and load.search.snippet:
        names = names + (SNIPPET,)
    kind = raw_kind(meta, plan)
    if kind is None:
        raise TypeError(f"{meta.name}: the plan {plan.name!r} holds what the loader cannot load")
    if load.keys is not None and not load.keys:     # no keys: no rows, and no statement
        return RawRows((), meta, plan, names, converting)
    sql, params = statement(access, meta, Selected(columns, signature), load)
    # Rows by their keys alone: one plan serves every value (db.read_rows).
    keyed = load.keys is not None and load.where is None and load.search is None \
        and session_free(access, meta)
    rows = RawRows(read_rows(access.database, sql, params, keyed).fetchall(), meta, plan, names,
                   converting)
    if budget is not None:
        budget.take(len(rows))
    present = getattr(meta.model, "present_rows", None)     # e.g. HistoryItem
    if present is not None:
        present(rows, access)
    # Under references, compositions and transient attributes, and for
    # Python code, each level loads what may be read (members too where
    # they are hidden: transient attributes may read them); an answer's
    # flat page only what it shows.
    nested = rows.nested = kind == NESTED or not load.shown
    by_ids = _shown_load if not nested else _nested_load
    if rows.links:
        fill_flat_members(access, rows, budget, by_ids,
                          shows=readable if nested else shows_reference)
    if nested:      # no rows: no statements, but the rows' shape (transient attributes)
        fill_nested(access, rows, budget, by_ids)
    return rows


def _shown_load(access: "Access", meta: "MetaClass", plan: "FetchPlan", key_field: Field,
                ids: Collection[Key], by: By) -> RawRows:
    """``_by_ids`` of the rows under an answer's flat page (its many-to-many members)."""
    return _by_ids(access, meta, plan, key_field, ids, by._replace(shown=True))


def _nested_load(access: "Access", meta: "MetaClass", plan: "FetchPlan", key_field: Field,
                 ids: Collection[Key], by: By) -> RawRows:
    """``_by_ids`` of the rows under a nested page's (references, compositions, members)."""
    return _by_ids(access, meta, plan, key_field, ids, by._replace(shown=False))


def session_free(access: "Access", meta: "MetaClass") -> bool:
    """Whether the statements reading ``meta`` hold nothing of the caller's
    session (no row-level role or row rule applies): their text can be kept.
    A caller's tenant is a parameter of them (``statement``)."""
    return not access.permissions.row_restricted(meta.name) and not hasattr(meta.model, "row_rule")


def kept_shape(access: "Access", tree: Node) -> tuple[Any, list[Any]]:
    """``filter_shape`` of a tree, worked out once for a tree the caller
    keeps (DataManager.filter)."""
    kept = access.memo.get(id(tree))
    if kept is None or kept[0] is not tree:
        return filter_shape(access.database, tree)
    if kept[1] is None:
        kept = access.memo[id(tree)] = (tree, filter_shape(access.database, tree))
    shape: tuple[Any, list[Any]] = kept[1]
    return shape


class Selected(NamedTuple):
    """The columns of a statement and their signature (``Columns``)."""
    columns: list[tuple[str, Field]]
    signature: str


def statement(access: "Access", meta: "MetaClass", selected: Selected,
              load: Load) -> tuple[str, list[Any]]:
    """SQL and parameters. Building SQL with Peewee costs more than running a
    small query, so the text of each shape (the columns, the filter's paths,
    operators and number of values, sort, paging; no row-level roles) is kept
    and reused with the new parameters. A shape is kept only when its
    parameters, worked out without Peewee, are exactly the ones Peewee bound.
    A page after a cursor is built each time (its key's values are parameters
    of a shape of their own)."""
    keys, key_field, limit, offset, sort = load.keys, load.key_field, load.limit, load.offset, \
        load.sort
    where_filter, with_deleted, after, search = load.where, load.with_deleted, load.after, \
        load.search
    array, bound = False, list[Any]()
    if keys is not None:
        keys = list(keys)
        # On PostgreSQL many keys are one parameter, an array: one text (and
        # one prepared statement, ``keyed``) whatever their number; it reads
        # a uuid's canonical text as it is.
        array = len(keys) > 1 and not is_sqlite(access.database)
        bound = [list_param(access.database, keys, key_type(key_field))] if array \
            else list(map(stored(key_field), keys))
    paging = ([limit] if limit is not None else []) + ([offset] if offset else [])
    cache_key = None
    if after is None and session_free(access, meta) and (search is None or keys is None):
        shape, filtering = None, list[Any]()
        if where_filter is not None:
            shape, filtering = kept_shape(access, where_filter)
        # A ranked search's: in the select list (snippets), the WHERE, the ORDER BY.
        selecting, matching, ordering = ([], [], []) if search is None \
            else search_parameters(access.database, search)
        # A caller's tenant is the first condition (data/tenancy.py); a join
        # or a collection that reaches a tenant-scoped entity adds more, and
        # then the parameters differ from Peewee's and the text is not kept.
        tenant = access.tenant
        tenanted = [tenant] if tenant is not None and meta.tenant else []
        params = selecting + tenanted + filtering + bound + matching + ordering + paging
        cache_key = (selected.signature, shape, sort, limit is not None, bool(offset),
                     key_field.name if keys is not None else None,
                     "many" if array else len(keys) if keys is not None else None,
                     id(access.permissions) if sort or shape else None,
                     meta.soft_delete and (with_deleted or access.include_deleted),
                     None if search is None else search.shape, tenant is not None)
        sql = access.sql_cache.get(cache_key)
        if sql is not None:
            return sql, params
    query = EntityQuery(meta, access, with_deleted=with_deleted)
    condition = query.where(where_filter)
    if array:
        matches = among(key_field, keys or ())      # ``bound``'s one parameter
        condition = matches if condition is None else condition & matches
    elif keys is not None:
        matches = key_field == keys[0] if len(keys) == 1 else key_field.in_(keys)
        condition = matches if condition is None else condition & matches
    terms = query.sort_terms(sort) if sort is not None else None    # may add joins
    order = [column.desc() if descending else column.asc() for column, descending in terms or ()]
    if after is not None:
        keyset = after_key(access.database, terms or [], after)
        condition = keyset if condition is None else condition & keyset
    select = query.apply_joins(meta.model.select(*[field for _, field in selected.columns]))
    if search is not None:
        select, condition = _searched(access, meta, select, condition, search, order)
    if condition is not None:
        select = select.where(condition)
    if order:
        select = select.order_by(*order)
    if limit is not None:
        select = select.limit(limit)
    if offset:
        select = select.offset(offset)
    sql, built = select.sql()
    if cache_key is not None and list(built) == params:
        if len(access.sql_cache) >= 1024:
            access.sql_cache.clear()
        access.sql_cache[cache_key] = sql
    return sql, built


def _searched(access: "Access", meta: "MetaClass", select: Any, condition: Any,
              search: TextSearch, order: list[Any] | None = None) -> tuple[Any, Any]:
    """(select, condition) with a ranked search's (textsearch.py): its join,
    its condition, its snippet column when asked; its relevance first in
    ``order``."""
    found = ranked(access, meta.model, search)
    if found.join is not None:
        source, on = found.join
        select = select.join_from(meta.model, source, peewee.JOIN.INNER, on=on)
    if found.snippet is not None:
        select = select.select_extend(found.snippet)
    if order is not None:
        order.insert(0, found.order)
    return select, found.condition if condition is None else condition & found.condition


def count_rows(access: "Access", meta: "MetaClass", where_filter: Node | None = None,
               search: TextSearch | None = None) -> int:
    """How many rows of ``meta`` match the filter (and ``search``, a
    textsearch.TextSearch) under the caller's row-level roles."""
    query = EntityQuery(meta, access)
    condition = query.where(where_filter)
    model: Any = meta.model
    select = query.apply_joins(model.select(model.id))
    if search is not None:
        select, condition = _searched(access, meta, select, condition, search)
    if condition is not None:
        select = select.where(condition)
    count: int = select.count()
    return count


def _by_ids(access: "Access", meta: "MetaClass", plan: "FetchPlan", key_field: Field,
            keys: Collection[Key], by: By = PLAIN) -> RawRows:
    """The rows of ``plan`` whose ``key_field`` is one of ``keys``, in chunks."""
    rows: RawRows | None = None
    ids = sorted(keys)
    budget = by.budget
    # No keys: one load of none, which gives the rows' shape without a statement.
    for start in range(0, max(len(ids), 1), _CHUNK):
        chunk = select_rows(access, meta, plan, Load(
            sort="", parent_column=by.parent_column, key_field=key_field,
            keys=ids[start:start + _CHUNK], limit=None if budget is None else budget.left + 1,
            budget=budget, with_deleted=by.with_deleted, shown=by.shown))
        if rows is None:
            rows = chunk
        else:
            rows.extend(chunk)  # with what was loaded for the chunk's rows
    assert rows is not None
    return rows
