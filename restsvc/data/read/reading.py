"""How a plan is read: the one place that decides it, worked out once.

A ``Reading`` is what every load of one entity along one plan (None: the
instance name and id only) has in common for one caller's permissions,
``returnNulls`` and whether it is tagged: the loading plan (the plan plus
what instance names need, and the version when tagged), whether its rows
are an answer's (written by the row writers: only what it shows is loaded)
or Python code's (converted by records.py: what the caller may read), and
the ETag digest's shape. It is kept per permissions in a ``Memo``; a get is
then one statement, one row writer and its tag.
"""
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ...jsonio import RawJson
from ..answer.etags import entity_tag, plan_key, tag_of, tag_shape, versioned
from ..memo import Memo
from ..answer.rowwriters import row_writer
from ..columns import row_id, stored
from .flatrows import is_flat, write_flat, write_flat_each
from .rows import RawRows, tag_row
from .loader import Selected, columns_of, loading_plan, select_rows, session_free, statement
from .sizes import too_many
from .request import Budget, Load
from .rows import Converter, Key, Values
from ..answer.rowwriters import RowWriter

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass
    from ..access import Access

_READINGS_MAX = 256     # per permissions: inline plans of new shapes cannot grow it without end


@dataclass(slots=True)
class Reading:
    """How one plan of one entity is read and written for one set of permissions."""
    meta: "MetaClass"
    plan: "FetchPlan | None"    # the request's plan; None: instance names only
    loading: "FetchPlan"        # the loading plan
    answer: bool            # rows written as an answer (else converted for Python code)
    return_nulls: bool
    shape: str | None       # the ETag digest's shape; None: per caller (row-level roles)
    # The load of one row by id, worked out at the first (``one``), per
    # whether soft-deleted rows are read and whether the caller's tenant
    # limits them (the statement differs).
    ones: dict[bool | tuple[bool, bool], "One | None"] = field(default_factory=dict)


class One(NamedTuple):
    """A load of one row by id of a flat ``Reading``, worked out once: the
    statement the loader builds for it, the id's stored form, the row's id as
    the loader converts it, where its version is, and its row writer."""
    sql: str
    stored: Converter
    row_id: Callable[[Values], Key]
    version: int | None
    write: RowWriter
    tenant_first: bool = False      # the caller's tenant is its first parameter (data/tenancy.py)

    def params(self, access: "Access", key: Key) -> list[object]:
        """The statement's parameters that read the row ``key``."""
        return [access.tenant, self.stored(key)] if self.tenant_first else [self.stored(key)]


def one(access: "Access", read: Reading, key: Key) -> One | None:
    """The ``One`` of ``read``, or None where the statement holds the caller's
    session (row-level roles, row rules) or the plan loads more than its own
    row's columns (references, compositions, members, transient attributes):
    then ``load`` reads it as any page. A caller's tenant is the statement's
    first parameter (``One.tenant_first``)."""
    deleted = bool(read.meta.soft_delete and access.include_deleted)
    # A Reading is shared by the callers of one set of permissions, with a
    # tenant or without: a tenant's caller's statement is one of its own.
    slot: bool | tuple[bool, bool] = deleted if access.tenant is None or not read.meta.tenant \
        else (deleted, True)
    if slot in read.ones:
        return read.ones[slot]
    found = read.ones[slot] = _one(access, read, key)
    return found


def _one(access: "Access", read: Reading, key: Key) -> One | None:
    meta, loading = read.meta, read.loading
    if not read.answer or not session_free(access, meta) or not is_flat(meta, loading):
        return None
    columns = columns_of(meta, loading, access.database)
    rows = RawRows((), meta, loading, columns.names, columns.converting)
    if rows.links:
        return None
    model: Any = meta.model
    sql, params = statement(access, meta, Selected(columns.selected, columns.signature),
                            Load(key_field=model.id, keys=[key]))
    tenant_first = access.tenant is not None and meta.tenant
    if tenant_first and list(params) != [access.tenant, stored(model.id)(key)]:
        return None
    names = columns.names
    return One(sql, stored(model.id), row_id(meta),
               names.index("version") if "version" in names else None,
               row_writer(meta, rows, read.plan, access.permissions, read.return_nulls),
               tenant_first)


def one_tag(access: "Access", read: Reading, found: One, values: Values) -> str | None:
    """The ETag of a row ``found`` read (``tag``), or None without a version."""
    if found.version is None or values[found.version] is None:
        return None
    # With row-level roles the session's values are part of the digest.
    shape = read.shape or tag_shape(read.plan, access.permissions, access.session,
                                    read.return_nulls)
    return tag_of(found.row_id(values), values[found.version], shape)


def reading(access: "Access", meta: "MetaClass", plan: "FetchPlan | None",
            return_nulls: bool = False, tagged: bool = False, answer: bool = True) -> Reading:
    """The ``Reading`` of a load; ``answer``: its rows are written as JSON text
    (else Python code reads them: converted rows)."""
    permissions = access.permissions
    memo = permissions.memo.get("readings")
    if memo is None:
        memo = permissions.memo["readings"] = Memo("readings", _READINGS_MAX)
    # One of the entity's named plans by itself; any other (an inline plan
    # is new per request) by its tag key: plans of one shape write the same
    # bytes, but a named and an inline plan are told apart by their ETags.
    named = plan is not None and meta.fetch_plans.get(plan.name or "") is plan
    key = (meta.name, plan if named else plan_key(plan), return_nulls, tagged, answer)
    found: Reading | None = memo.get(key)
    if found is None:
        loading = loading_plan(plan or meta.fetch_plans["_instance_name"])
        if tagged:
            loading = versioned(meta, loading)
        shape = None if permissions.row_level_roles \
            else tag_shape(plan, permissions, access.session, return_nulls)
        found = memo.put(key, Reading(meta, plan, loading, answer, return_nulls, shape))
    return found


def load(access: "Access", read: Reading, budget: Budget, query: Load) -> RawRows:
    """Rows of ``read`` matching ``query`` within the answer's entity budget;
    what writing them would write is counted before anything is written."""
    rows = select_rows(access, read.meta, read.loading,
                       query._replace(budget=budget, shown=read.answer))
    # A flat page counted its members as it loaded them (members.py).
    if rows.nested and too_many(rows, read.plan, access.permissions, budget.limit + budget.spare):
        raise budget.exceeded()
    return rows


def tag(access: "Access", read: Reading, rows: RawRows) -> str | None:
    """The ETag of the first of ``rows`` (``etags.entity_tag``), or None without a version."""
    if read.shape is None:
        return entity_tag(tag_row(rows), read.plan, access.permissions, access.session,
                          read.return_nulls)
    found = tag_row(rows)
    version = found["version"]
    return None if version is None else tag_of(found["id"], version, read.shape)


def write_all(access: "Access", read: Reading, rows: RawRows) -> RawJson:
    """A JSON array of the entities of ``rows``."""
    return write_flat(read.meta, rows, read.plan, access.permissions, read.return_nulls)


def write_each(access: "Access", read: Reading, rows: RawRows) -> list[tuple[Key, RawJson]]:
    """[(id, JSON text)] of each entity of ``rows``, in their order."""
    return write_flat_each(read.meta, rows, read.plan, access.permissions, read.return_nulls)
