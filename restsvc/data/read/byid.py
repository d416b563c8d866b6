"""A get: one entity of a flat plan loaded by id, its way worked out once.

What a load by id needs besides the statement and the row writer (the
loading plan, the column list, the statement's text, the writer, the id's
and version's positions, what the ETag's digest reads besides the id) is the
same on every get of one entity, plan shape, caller's permissions,
``returnNulls`` and ``includeDeleted``, so it is worked out on the first and
kept with the permissions (``Reader``); a get then costs one statement, one
row writer and its ETag. It applies where the loader's SQL cache applies (no
row-level role or row rule of the entity: those put the caller's session in
the statement) and to flat plans without many-to-many members; every other
load by id goes through the loader. The rows, bytes and ETags are the
loader's: the statement is the one the loader builds, the writer and the
id's conversion are flatrows', the tag is ``etags.tag_of``.
"""
from ..columns import stored
from ..answer.etags import plan_key, tag_of, tag_shape, versioned
from .flatrows import RawRows, _key_columns, _row_id, _writer, flat_shape, is_flat
from .loader import _columns, _statement, loading_plan, session_free

_READERS_MAX = 256      # per permissions: inline plans of new shapes cannot grow it without end


class Reader:
    """One entity's load by id for one plan shape, permissions and ``returnNulls``."""

    __slots__ = ("sql", "key", "row_id", "version", "write", "shape", "plan", "return_nulls")

    def __init__(self, access, meta, rows, sql, plan, return_nulls):
        self.sql, self.key, self.row_id = sql, stored(meta.model.id), _row_id(meta)
        version = _key_columns(rows).get("version")
        self.version = None if version is None else version[0]
        self.write = _writer(meta, rows, plan, access.permissions, return_nulls)
        self.plan, self.return_nulls = plan, return_nulls
        # The session's values are part of the digest with row-level roles
        # (etags.permissions_key): then it is worked out per caller.
        self.shape = None if access.permissions.row_level_roles \
            else tag_shape(plan, access.permissions, access.session, return_nulls)

    def load(self, access, key):
        """The row's database values, or None when the caller cannot see it."""
        return access.database.execute_sql(self.sql, [self.key(key)]).fetchone()

    def tag(self, values, access):
        """The row's ETag (as ``etags.entity_tag``), or None without a version."""
        if self.version is None or values[self.version] is None:
            return None
        shape = self.shape or tag_shape(self.plan, access.permissions, access.session,
                                        self.return_nulls)
        return tag_of(self.row_id(values), values[self.version], shape)


def reader(access, meta, plan, key, return_nulls):
    """The Reader of this get, or None: the loader's general way applies."""
    if plan is None:
        return None
    permissions = access.permissions
    memo = permissions.memo.get("readers")
    if memo is None:
        memo = permissions.memo["readers"] = {}
    # The plan's tag key too: plans of one shape write the same bytes, but
    # a named and an inline plan are told apart by their ETags.
    found_key = (meta.name, flat_shape(plan), plan_key(plan), return_nulls,
                 meta.soft_delete and access.include_deleted)
    found = memo.get(found_key, False)
    if found is False:
        if len(memo) >= _READERS_MAX:
            memo.clear()
        found = memo[found_key] = _build(access, meta, plan, key, return_nulls)
    return found


def _build(access, meta, plan, key, return_nulls):
    if not session_free(access, meta):
        return None
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

