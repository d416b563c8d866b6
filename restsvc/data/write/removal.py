"""Deletes and restores: steps of the one write path (ARCHITECTURE.md rule 11).

``Writer.delete`` and ``Writer.restore`` (writer.py) run these, in a
transaction the caller holds. A delete: row rules on the rows as they are,
the model's ``before_delete`` hook, history of the rows and of their
composition children at every depth (``owned.composed``), references
checked, events, memberships removed, the statement, ``after_delete``. A
``soft_delete`` entity's rows are marked instead (softdelete.py). A restore
unmarks a soft-deleted row and its children as an update: rules_before (on
the row as deleted), audit, statement, rules_after, history (RESTORE items),
events (UPDATE).
"""
import dataclasses
import datetime
from collections.abc import Sequence
from typing import TYPE_CHECKING

import peewee

from ...errors import Conflict, PreconditionFailed
from . import history, outbox, softdelete
from .hooks import Hooks
from ..access import Access
from ..columns import among
from ..answer.etags import version_is
from .owned import Reached, composed, referrers
from .rowrules import check_rows

if TYPE_CHECKING:
    from ...model.meta import MetaClass

Id = str | int


def delete(access: Access, hooks: Hooks, meta: "MetaClass", ids: Sequence[Id],
           expected_versions: int | tuple[int, ...] | None, with_owner: bool, purge: bool,
           now: datetime.datetime) -> None:
    """Delete rows (their compositions and memberships go with them);
    refuse while other rows refer to them. ``expected_versions`` (If-Match):
    only rows at one of them are deleted, else nothing is. ``with_owner``:
    children removed by their owner's save, which checks the owner's rules.
    A ``soft_delete`` entity's rows are marked instead, unless purged.
    ``now``: the write's instant (its marks, history items and events)."""
    check_rows(access, meta, "delete", ids, before=True, owners=not with_owner)
    doomed = hooks.before_delete(meta.model, ids)
    soft = meta.soft_delete and not purge
    rows = composed(meta, ids, soft)
    _history_of_delete(access, rows, now)
    if soft:
        marked = softdelete.mark(access, rows, now, versions=expected_versions)
        if expected_versions is not None and marked < len(ids):
            raise PreconditionFailed(meta.name, ids[0] if len(ids) == 1 else ids)
        _events_of(access, rows, "DELETE", [], now)        # the rows as marked
        hooks.after_delete(doomed)
        return
    model = meta.model
    for ref_meta, fk in referrers(access.metadata, meta):
        if fk.model.select().where(among(fk, ids)).exists():
            raise Conflict("Delete policy violation",
                           f"Unable to delete {meta.name} because there are references from "
                           f"{ref_meta.name}")
    _events_of(access, rows, "DELETE", [], now)            # the rows as they were
    for link in meta.links:
        link.through.delete().where(among(link.owner_field, ids)).execute()
    condition = among(model.id, ids)
    if expected_versions is not None:
        condition &= version_is(model, expected_versions)
    try:
        deleted = model.delete().where(condition).execute()
    except peewee.IntegrityError:
        raise Conflict("Delete policy violation",
                       f"Unable to delete {meta.name} because other rows refer to it") from None
    if expected_versions is not None and deleted < len(ids):
        raise PreconditionFailed(meta.name, ids[0] if len(ids) == 1 else ids)
    hooks.after_delete(doomed)


def restore(access: Access, meta: "MetaClass", key: Id, deleted: datetime.datetime,
            audit: dict[str, str | datetime.datetime], now: datetime.datetime) -> None:
    """Unmark a soft-deleted row and the composition children deleted with
    it (at the instant ``deleted``, at every depth), with the ``audit``
    values of an update; its history items and events at ``now``, the audit
    values' instant. 409 when a live row now holds one of its unique keys."""
    seeing = dataclasses.replace(access, include_deleted=True)
    check_rows(seeing, meta, "update", [key], before=True)         # rules_before, as deleted
    rows = composed(meta, [key], deleted=deleted)
    try:
        softdelete.unmark(rows, deleted, audit)                     # the statement
    except peewee.IntegrityError:
        raise Conflict("Unique key taken", f"A live {meta.name} now holds a unique value "
                                           f"of {key}; change it first") from None
    check_rows(access, meta, "update", [key])                      # rules_after
    history.record(access, softdelete.restore_items(rows, deleted), now=now)
    _events_of(access, rows, "UPDATE", ["deletedBy", "deletedDate"], now)   # a restore is an update


def _events_of(access: Access, rows: Reached, kind: str, changed: list[str],
               now: datetime.datetime) -> None:
    """Events of the rows that publish them (``rows`` as ``composed`` finds
    them: a delete's, a marking's or a restore's), from the rows as stored now."""
    for meta, ids in rows:
        if meta.events and ids:
            outbox.record(access, meta, outbox.written(meta, ids, kind == "DELETE"), kind, changed,
                          now=now)


def _history_of_delete(access: Access, rows: Reached, now: datetime.datetime) -> None:
    """DELETE items of the rows and of the composition children that go
    with them (``rows`` as ``composed`` finds them)."""
    items: list[history.HistoryEntry] = []
    for meta, ids in rows:
        if meta.history is not None:
            items += history.deleted_items(meta, ids)
    history.record(access, items, now=now)
