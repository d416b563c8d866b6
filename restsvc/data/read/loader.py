"""Loading entity graphs along a fetch plan.

Rows are plain dicts keyed by attribute name. One query loads the root rows;
each reference in the plan costs one more query for all rows at once (never
one per row): a many-to-many association's link keys come with the owners'
rows and its members are loaded by id (members.py). References to entities
the caller may not read are left out; referenced rows hidden by row-level
roles become null (to-one) or are absent (collections).
"""
from functools import partial

from ...db import is_sqlite
from ...errors import BadRequest
from ...model.fetchplan import ids_only
from ..columns import conversions, converter, read_rows, stored
from .cursors import after_key
from .members import fill_members, member_column
from .flatrows import NESTED, RawRows, fill_flat_members, raw_kind
from .nestedrows import PARENT as _PARENT, fill_nested, readable
from ..answer.rowwriters import shows_reference
from .query import EntityQuery, filter_shape

_CHUNK = 500        # ids per IN (...) when loading referenced rows
RESPONSE_TOO_LARGE = "Response too large"    # the error of an answer beyond its entity budget


def loading_plan(plan):
    """The plan plus what ``_instanceName`` needs, at every level (cached on the plan)."""
    cached = getattr(plan, "_loading", None)
    if cached is not None:
        return cached
    merged = dict(plan.properties)
    extra = plan.entity.fetch_plans["_instance_name"]
    for name, nested in extra.properties.items():
        if name not in merged:
            merged[name] = nested
    properties = {name: (loading_plan(nested) if nested is not None else None)
                  for name, nested in merged.items()}
    result = type(plan)(plan.name, plan.entity, properties)
    result._loading = result
    plan._loading = result
    return result


def _columns(meta, plan, database):
    """(attribute name, peewee field or expression) pairs the root query
    selects, their names, the conversions of their values, a text signature
    for the SQL cache, the plan's transient attributes, its embedded values
    (name, their attributes) and its many-to-many attributes (each selected
    as its link keys, members.py); worked out once per plan and database kind."""
    kind = "_columns_sqlite" if is_sqlite(database) else "_columns_pg"
    cached = plan.__dict__.get(kind)
    if cached is None:
        columns, embedded, links = [("id", meta.model.id)], [], []
        for name, nested in plan.properties.items():
            prop = meta.properties[name]
            if name != "id" and prop.persistent and prop.field is not None and not prop.is_collection:
                columns.append((name, prop.field))
            elif prop.is_embedded:
                parts = [part for part in nested.properties
                         if prop.target.properties[part].field is not None]
                columns += [(f"{name}.{part}", prop.target.properties[part].field)
                            for part in parts]
                embedded.append((name, parts))
            elif prop.link is not None:
                links.append((name, member_column(database, prop)))
        transients = [meta.properties[name] for name in plan.properties
                      if meta.properties[name].getter is not None]
        converters = [converter(field) for _, field in columns] + [None] * len(links)
        columns += links
        cached = (columns, [name for name, _ in columns], conversions(converters),
                  f"{meta.name}:{','.join(name for name, _ in columns)}", transients, embedded)
        setattr(plan, kind, cached)
    return cached


class Budget:
    """How many entities one answer may hold (svc.rest.max-response-entities).
    Loading counts the rows it reads and asks no query for more than are
    left; the serializer counts the objects it would write before writing."""

    def __init__(self, limit, spare=0):
        # ``spare`` rows more may be loaded to see whether a next page
        # exists; they are dropped before writing, and each holds at least
        # one entity, so what is written stays within ``limit``.
        self.limit = limit
        self.spare = spare
        self.left = limit + spare

    def take(self, count):
        self.left -= count
        if self.left < 0:
            raise self.exceeded()

    def exceeded(self):
        return BadRequest(RESPONSE_TOO_LARGE,
                          f"The answer would hold more than {self.limit} entities "
                          "(svc.rest.max-response-entities); ask for fewer rows or a "
                          "smaller fetch plan")


def visible_ids(access, meta, keys):
    """Which of ``keys`` name rows of ``meta`` the caller's row-level roles let it see."""
    return {row["id"] for row in _by_ids(access, meta, ids_only(meta), meta.model.id, keys)}


def select_rows(access, meta, plan, where_filter=None, sort=None, limit=None, offset=None,
                key_field=None, keys=None, parent_column=None, budget=None,
                with_deleted=False, after=None, raw=False):
    """Rows of ``meta`` matching the filter tree, the caller's row-level roles
    and ``key_field IN keys``, loaded along ``plan`` (already a loading plan),
    counted against ``budget`` (a Budget, or None for no bound).
    Soft-deleted rows are left out unless the caller asked for them or
    ``with_deleted`` (a to-one reference from a live row). ``after``: a sort
    key (cursors.py); only rows after it in the sort. ``raw``: the rows of a
    plan ``flatrows.raw_kind`` covers as the database gives them
    (flatrows.RawRows), at every level."""
    columns, names, converting, signature, _, embedded = _columns(meta, plan, access.database)
    if parent_column is not None:
        converting = converting + conversions([None] * len(columns) + [converter(parent_column)])
        columns = columns + [(_PARENT, parent_column)]
        names = names + [_PARENT]
        signature += f"+{parent_column.model._meta.table_name}.{parent_column.name}"
    keys = list(keys) if keys is not None else None
    sql, params = _statement(access, meta, columns, signature, where_filter, sort, limit, offset,
                             key_field, keys, with_deleted=with_deleted, after=after)
    cursor = access.database.execute_sql(sql, params)
    kind = raw_kind(meta, plan) if raw else None
    rows = RawRows(cursor.fetchall(), meta, plan, names, converting) if kind \
        else read_rows(cursor, names, converting)
    if budget is not None:
        budget.take(len(rows))
    if kind:
        # Under references, compositions and transient attributes, each level
        # loads what the general way loads (members too where they are hidden:
        # transient attributes may read them); a flat page only what it shows.
        nested = rows.nested = kind == NESTED or raw == NESTED
        load = partial(_by_ids, raw=NESTED if nested else True)
        if rows.links:
            fill_flat_members(access, rows, budget, load, shows=readable if nested else shows_reference)
        if nested:      # no rows: no statements, but the rows' shape (transient attributes)
            fill_nested(access, rows, budget, load)
        return rows
    return _complete(access, meta, plan, rows, budget)


def _complete(access, meta, plan, rows, budget):
    """Converted rows -> what the plan asks: embedded values folded, references
    loaded, transient attributes worked out."""
    _, _, _, _, transients, embedded = _columns(meta, plan, access.database)
    if embedded:
        _fold_embedded(rows, embedded)
    fill_references(access, meta, plan, rows, budget)
    for row in rows:
        for prop in transients:
            row[prop.name] = prop.getter(row_view(meta, row))
    present = getattr(meta.model, "present_rows", None)     # e.g. HistoryItem
    if present is not None:
        present(rows, access)
    return rows


def session_free(access, meta):
    """Whether the statements reading ``meta`` hold nothing of the caller's
    session (no row-level role or row rule applies): their text can be kept."""
    return not access.permissions.row_restricted(meta.name) and not hasattr(meta.model, "row_rule")


def kept_shape(access, tree):
    """``filter_shape`` of a tree, worked out once for a tree the caller
    keeps (DataManager.filter)."""
    kept = access.memo.get(id(tree))
    if kept is None or kept[0] is not tree:
        return filter_shape(access.database, tree)
    if kept[1] is None:
        kept = access.memo[id(tree)] = (tree, filter_shape(access.database, tree))
    return kept[1]


def _statement(access, meta, columns, signature, where_filter, sort, limit, offset, key_field,
               keys, with_deleted=False, after=None):
    """SQL and parameters. Building SQL with Peewee costs more than running a
    small query, so the text of each shape (the columns, the filter's paths,
    operators and number of values, sort, paging; no row-level roles) is kept
    and reused with the new parameters. A shape is kept only when its
    parameters, worked out without Peewee, are exactly the ones Peewee bound.
    A page after a cursor is built each time (its key's values are parameters
    of a shape of their own)."""
    if keys is None:
        params = []
    else:
        params = list(map(stored(key_field), keys))
    if limit is not None:
        params.append(limit)
    if offset:
        params.append(offset)
    cache_key = None
    if after is None and session_free(access, meta):
        shape = None
        if where_filter is not None:
            shape, filter_params = kept_shape(access, where_filter)
            params = filter_params + params
        cache_key = (signature, shape, sort, limit is not None, bool(offset),
                     key_field.name if keys is not None else None,
                     len(keys) if keys is not None else None,
                     id(access.permissions) if sort or shape else None,
                     meta.soft_delete and (with_deleted or access.include_deleted))
        sql = access.sql_cache.get(cache_key)
        if sql is not None:
            return sql, params
    query = EntityQuery(meta, access, with_deleted=with_deleted)
    condition = query.where(where_filter)
    if keys is not None:
        matches = key_field == keys[0] if len(keys) == 1 else key_field.in_(keys)
        condition = matches if condition is None else condition & matches
    terms = query.sort_terms(sort) if sort is not None else None    # may add joins
    order = [column.desc() if descending else column.asc() for column, descending in terms or ()]
    if after is not None:
        keyset = after_key(access.database, terms, after)
        condition = keyset if condition is None else condition & keyset
    select = query.apply_joins(meta.model.select(*[field for _, field in columns]))
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


def _fold_embedded(rows, embedded):
    """The columns of each embedded value -> one nested dict (None when all are null)."""
    for row in rows:
        for name, parts in embedded:
            value = {part: row.pop(f"{name}.{part}") for part in parts}
            row[name] = value if any(item is not None for item in value.values()) else None


def count_rows(access, meta, where_filter=None):
    query = EntityQuery(meta, access)
    condition = query.where(where_filter)
    select = query.apply_joins(meta.model.select(meta.model.id))
    if condition is not None:
        select = select.where(condition)
    return select.count()


def fill_references(access, meta, plan, rows, budget=None):
    if not rows:
        return
    permissions = access.permissions
    for name, nested in plan.properties.items():
        if nested is None:
            continue
        prop = meta.properties[name]
        target = prop.target
        if prop.is_embedded:        # the references inside embedded values
            fill_references(access, target, nested,
                            [row[name] for row in rows if row.get(name) is not None], budget)
            continue
        if not permissions.can(target.name, "read"):
            for row in rows:
                row.pop(name, None)
            continue
        if prop.link is not None:
            fill_members(access, prop, nested, rows, budget, _by_ids)
        elif prop.is_collection:
            _fill_children(access, prop, nested, rows, budget)
        else:
            ids = {row[name] for row in rows if row.get(name) is not None}
            found = _by_ids(access, target, nested, target.model.id, ids, budget=budget,
                            with_deleted=True)
            by_id = {row["id"]: row for row in found}
            for row in rows:
                if row.get(name) is not None:
                    row[name] = by_id.get(row[name])


def _by_ids(access, meta, plan, key_field, ids, parent_column=None, budget=None,
            with_deleted=False, raw=False):
    rows = []
    ids = sorted(ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = select_rows(access, meta, plan, sort="", parent_column=parent_column,
                            key_field=key_field, keys=ids[start:start + _CHUNK],
                            limit=None if budget is None else budget.left + 1,
                            budget=budget, with_deleted=with_deleted, raw=raw)
        if start:
            rows.extend(chunk)  # RawRows: with what was loaded for the chunk's rows
        else:
            rows = chunk        # a raw plan's RawRows stay RawRows
    return rows


def _fill_children(access, prop, plan, rows, budget):
    back = prop.back_field
    children = _by_ids(access, prop.target, plan, back, {row["id"] for row in rows},
                       parent_column=back, budget=budget)
    _group(prop, rows, children)


def _group(prop, rows, children):
    grouped = {}
    for child in children:
        grouped.setdefault(child.pop(_PARENT), []).append(child)
    for row in rows:
        row[prop.name] = grouped.get(row["id"], [])


def row_view(meta, row):
    """What a transient attribute's getter sees as ``self``: the loaded values
    as attributes (the row itself is the view's ``__dict__``: no copy), loaded
    references as views too, and for anything the plan did not load, the
    stored entity (loaded at the first such access). Read-only."""
    cls = meta.__dict__.get("_row_view")
    if cls is None:
        cls = meta._row_view = _view_class(meta)
    view = cls.__new__(cls)
    view.__dict__ = row
    view._stored = None
    return view


class _RowView:
    __slots__ = ("__dict__", "_stored")
    _view_meta = None

    def __getattr__(self, name):        # not loaded
        return getattr(self._entity(), name)

    def _entity(self):
        if self._stored is None:
            self._stored = self._view_meta.model.get_by_id(self.__dict__["id"])
        return self._stored


def _view_class(meta):
    """The view class of one entity: references and transient attributes are
    properties (they win over the row's values); other values are read from
    the row directly."""
    namespace = {"__slots__": (), "_view_meta": meta}
    for name, prop in meta.properties.items():
        if prop.getter is not None:
            namespace[name] = property(lambda self, name=name: getattr(self._entity(), name))
        elif prop.is_reference:
            namespace[name] = property(_reference_getter(prop))
    return type(f"{meta.name}RowView", (_RowView,), namespace)


def _reference_getter(prop):
    name, target, many = prop.name, prop.target, prop.is_collection

    def get(self):
        row = self.__dict__
        if name not in row:
            return getattr(self._entity(), name)
        value = row[name]
        if many:
            return [row_view(target, child) for child in value]
        return row_view(target, value) if isinstance(value, dict) else value
    return get
