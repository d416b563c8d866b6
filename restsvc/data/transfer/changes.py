"""Changes by filter: update or delete every row a search filter finds, in
one transaction, through the one write path (``DataManager.save`` and
``DataManager.delete``: permissions, row rules, validators, audit fields,
history and events, per row).

A guard bounds the work: the request names the most rows it may touch
(``maxRows``, by default and at most ``svc.rest.max-change-rows``). The rows
are chosen in the write transaction; more matching rows than the guard is
409 naming their count, with nothing written. A dry run answers the count
and writes nothing.

Concurrent writers: the matching rows are chosen inside the write
transaction. On SQLite that transaction holds the database's write lock from
its start, so nothing else writes in between. On PostgreSQL the chosen rows
are locked (``SELECT ... FOR UPDATE``, in id order) before they are written:
a concurrent write of one of them waits for this change's commit, or this
change waits for its. A row that a concurrent transaction makes match after
the choice is not changed; one it deletes meanwhile makes the change 404
(nothing kept). No version check is made per row (an update by filter sets
the same values on each row whatever its version); each written row's
version goes up as with any update.
"""
from typing import TYPE_CHECKING, cast

from ...db import is_sqlite, write_transaction
from ...errors import BadRequest, Conflict, Text
from ..access import require
from ..read.loader import count_rows
from ..read.query import EntityQuery

if TYPE_CHECKING:
    from ..read.filters import Group
    from ...model.metadata import MetaClass
    from ..access import Access
    from ..datamanager import DataManager

# Keys an update by filter may not set: every row keeps its own.
_OWN_KEYS = ("id", "version", "_entityName", "_instanceName")


def max_rows_of(requested: object, limit: int) -> int:
    """The guard of one request: ``maxRows`` as sent (a whole number from 1
    to ``limit``), or ``limit`` when not sent."""
    if requested is None:
        return limit
    if not isinstance(requested, int) or isinstance(requested, bool) \
            or not 1 <= requested <= limit:
        raise BadRequest("Invalid parameter value", Text(
            "invalidMaxRows", "maxRows must be a whole number from 1 to {limit} "
            "(svc.rest.max-change-rows)", limit=limit))
    return requested


def update_by_filter(data: "DataManager", access: "Access", meta: "MetaClass",
                     filter_spec: object, values: object, max_rows: int,
                     dry_run: bool = False) -> int:
    """Set ``values`` (an update's JSON object) on every row the filter finds;
    the number of rows (to be) changed."""
    require(access, meta, "read")       # the filter reads the rows it chooses
    require(access, meta, "update")
    if not isinstance(values, dict) or not values:
        raise BadRequest("Malformed request JSON data structure",
                         "values must be a JSON object of the attributes to set")
    own = [key for key in _OWN_KEYS if key in values]
    if own:
        raise BadRequest("Invalid parameter value",
                         f"values cannot set {own[0]}: each row keeps its own")
    if dry_run:
        return _count(data, access, meta, filter_spec)
    with write_transaction(data.database):
        ids = _chosen(data, access, meta, filter_spec, max_rows)
        if ids:
            data.save(access, meta, [dict(values) for _ in ids], entity_ids=ids,
                      creating=False, bulk=True)
    return len(ids)


def delete_by_filter(data: "DataManager", access: "Access", meta: "MetaClass",
                     filter_spec: object, max_rows: int, dry_run: bool = False) -> int:
    """Delete (soft delete where the entity has it) every row the filter
    finds; the number of rows (to be) deleted."""
    require(access, meta, "read")
    require(access, meta, "delete")
    if dry_run:
        return _count(data, access, meta, filter_spec)
    with write_transaction(data.database):
        ids = _chosen(data, access, meta, filter_spec, max_rows)
        if ids:
            data.delete(access, meta, ids)
    return len(ids)


def _tree(data: "DataManager", access: "Access", meta: "MetaClass", filter_spec: object) -> "Group":
    if filter_spec is None:
        raise BadRequest("Cannot parse entities filter", "Entities filter cannot be null")
    tree = cast("Group", data.filter(access, meta, filter_spec))   # a filter given: its tree
    return tree


def _count(data: "DataManager", access: "Access", meta: "MetaClass", filter_spec: object) -> int:
    """A dry run's answer: how many rows the change would touch now."""
    return int(count_rows(access, meta, _tree(data, access, meta, filter_spec)))


def _chosen(data: "DataManager", access: "Access", meta: "MetaClass", filter_spec: object,
            max_rows: int) -> list[str | int]:
    """The ids of the rows to change, locked on PostgreSQL; 409 when more
    than ``max_rows`` match."""
    tree = _tree(data, access, meta, filter_spec)
    query = EntityQuery(meta, access)
    condition = query.where(tree)
    model = meta.model
    select = query.apply_joins(model.select(model.id))
    if condition is not None:
        select = select.where(condition)
    ids = [row[0] for row in select.order_by(model.id).limit(max_rows + 1).tuples()]
    if len(ids) > max_rows:
        count = count_rows(access, meta, tree)
        raise Conflict("Too many rows", Text(
            "tooManyRows", "The filter matches {count} rows; this request may change at most "
            "{limit} (maxRows): nothing was changed", count=count, limit=max_rows))
    if ids and not is_sqlite(data.database):
        list(model.select(model.id).where(model.id.in_(ids)).order_by(model.id)
             .for_update().tuples())
    return [meta.row_id(key) for key in ids]
