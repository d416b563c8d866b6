"""A get: one entity of a flat plan loaded by id, its way worked out once.

What a load by id needs besides the statement and the row writer (the
loading plan, the column list, the statement's cache key, a RawRows, the
writer's and the ETag's look-ups) is the same on every get of one entity,
plan shape, caller's permissions, ``returnNulls`` and ``includeDeleted``, so
it is worked out on the first and kept (``Reader``); a get then costs one
statement, one row writer and its ETag. It applies where the loader's SQL
cache applies (no row-level role or row rule of the entity: those put the
caller's session in the statement) and to flat plans without many-to-many
members; every other load by id goes through the loader. The rows, bytes
and ETags are the loader's: the statement is the one the loader builds, the
writer and the id's conversion are flatrows', the tag is ``etags.make_tag``.
"""
from ..db import is_sqlite
from .columns import stored
from .etags import make_tag, versioned
from .flatrows import RawRows, _key_columns, _row_id, _writer, flat_shape, is_flat
from .loader import _columns, _statement, loading_plan, session_free

_READERS: dict[tuple, tuple] = {}
_READERS_MAX = 1024


class Reader:
    """One entity's load by id for one plan shape, permissions and ``returnNulls``."""

    __slots__ = ("sql", "key", "row_id", "version", "write")

    def __init__(self, access, meta, rows, sql, plan, return_nulls):
        self.sql, self.key, self.row_id = sql, stored(meta.model.id), _row_id(meta)
        version = _key_columns(rows).get("version")
        self.version = None if version is None else version[0]
        self.write = _writer(meta, rows, plan, access.permissions, return_nulls)

    def load(self, access, key):
        """The row's database values, or None when the caller cannot see it."""
        return access.database.execute_sql(self.sql, [self.key(key)]).fetchone()

    def tag(self, values, plan, access, return_nulls):
        """The row's ETag (as ``etags.entity_tag``), or None without a version."""
        if self.version is None or values[self.version] is None:
            return None
        return make_tag(self.row_id(values), values[self.version], plan, access.permissions,
                        access.session, return_nulls)


def reader(access, meta, plan, key, return_nulls):
    """The Reader of this get, or None: the loader's general way applies."""
    if plan is None or not session_free(access, meta):
        return None
    memo = (id(meta), id(access.permissions), flat_shape(plan), return_nulls,
            meta.soft_delete and access.include_deleted, is_sqlite(access.database))
    entry = _READERS.get(memo)
    if entry is None or entry[0] is not meta or entry[1] is not access.permissions:
        if len(_READERS) >= _READERS_MAX:
            _READERS.clear()
        entry = _READERS[memo] = (meta, access.permissions,
                                  _build(access, meta, plan, key, return_nulls))
    return entry[2]


def _build(access, meta, plan, key, return_nulls):
    loading = versioned(meta, loading_plan(plan))
    if not is_flat(meta, loading):
        return None
    columns, names, converting, signature, _, _ = _columns(meta, loading, access.database)
    rows = RawRows((), meta, loading, names, converting)
    if rows.links:
        return None             # many-to-many members: the loader fills them
    sql, _ = _statement(access, meta, columns, signature, None, None, None, None,
                        meta.model.id, [key])
    return Reader(access, meta, rows, sql, plan, return_nulls)
