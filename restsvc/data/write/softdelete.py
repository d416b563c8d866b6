"""Soft delete: DELETE marks the row, restore unmarks it, purge removes it.

An entity declared with ``soft_delete=True`` has ``deletedDate`` and
``deletedBy``. The write path (data/write/writer.py) marks instead of deleting
(no reference check: the references stay valid), its soft-deleted
composition children with it at the same instant, and restores (unmarks)
through the steps of an update; this module holds their statements and the
look-up of a deleted row; every read leaves marked
rows out (data/read/query.py ``row_condition``) except a to-one reference from a
live row, which stays readable by id. Three grants, specific policies of
resource roles:

    rest.deleted.read      ``?includeDeleted=true`` on list, search, count and load
    rest.deleted.restore   POST /rest/entities/<entity>/<id>/restore
    rest.deleted.purge     POST /rest/entities/<entity>/<id>/purge
"""
import dataclasses
import datetime
from typing import TYPE_CHECKING

from ...errors import BadRequest, Conflict, Forbidden, entity_not_found
from . import history
from ..access import Access, require
from ..columns import among
from ..answer.etags import version_is
from ..read.loader import visible_ids
from .history import HistoryEntry
from ..ids import parse_id
from .owned import Reached

if TYPE_CHECKING:
    from ...model.metadata import MetaClass

SEE_DELETED, RESTORE, PURGE = "rest.deleted.read", "rest.deleted.restore", "rest.deleted.purge"


def including_deleted(access: Access) -> Access:
    """``access`` that also sees soft-deleted rows; 403 without the grant."""
    if not access.permissions.specific(SEE_DELETED):
        raise Forbidden("Forbidden", "Reading deleted entities needs the grant "
                                     f"{SEE_DELETED}")
    return dataclasses.replace(access, include_deleted=True)


def mark(access: Access, rows: Reached, when: datetime.datetime,
         versions: int | tuple[int, ...] | None = None) -> int:
    """Mark live rows deleted, ``rows`` as ``composed`` (data/write/owned.py) finds
    them for a soft delete: the rows first, then their soft-deleted composition
    children at every depth; how many of the first rows were marked.
    ``versions`` (If-Match): only first rows at one of them."""
    marked = 0
    for index, (meta, ids) in enumerate(rows):
        model = meta.model
        condition = among(model.id, ids) & model._meta.fields["deletedDate"].is_null()
        if versions is not None and index == 0:
            condition &= version_is(model, versions)
        count: int = model.update(deletedDate=when, deletedBy=access.username,
                                  version=model.version + 1).where(condition).execute()
        if index == 0:
            marked = count
    return marked


def unmark(rows: Reached, deleted: datetime.datetime,
           audit: dict[str, str | datetime.datetime]) -> None:
    """Unmark rows deleted at the instant ``deleted`` (``rows`` as for
    ``mark``): a new version, and ``audit`` values for audited entities."""
    for meta, ids in rows:
        model = meta.model
        model.update(deletedDate=None, deletedBy=None, version=model.version + 1,
                     **(audit if meta.audited else {})) \
            .where(among(model.id, ids) & (model._meta.fields["deletedDate"] == deleted)).execute()


def restore_items(rows: Reached, deleted: datetime.datetime) -> list[HistoryEntry]:
    """RESTORE history items of the rows that keep history."""
    items: list[HistoryEntry] = []
    for meta, ids in rows:
        if meta.history is not None:
            change = [{"name": "deletedDate", "oldValue": history.json_value(
                meta.properties["deletedDate"], deleted), "newValue": None}]
            items += [HistoryEntry(meta, key, "RESTORE", change) for key in ids]
    return items


def deleted_row(access: Access, meta: "MetaClass", entity_id: str | int, grant: str,
                operation: str) -> tuple[str | int, datetime.datetime]:
    """The id and deletion instant of a soft-deleted row the caller may act on
    (restore: ``RESTORE``, "update"; purge: ``PURGE``, "delete")."""
    if not meta.soft_delete:
        raise BadRequest("Soft delete not used", f"Entity {meta.name} is deleted for good")
    if not access.permissions.specific(grant):
        raise Forbidden("Forbidden", f"This needs the grant {grant}")
    require(access, meta, operation)
    key = parse_id(meta, entity_id)
    if not visible_ids(dataclasses.replace(access, include_deleted=True), meta, [key]):
        raise entity_not_found(meta.name, entity_id)
    model = meta.model
    deleted: datetime.datetime | None = model.select(
        model._meta.fields["deletedDate"]).where(model.id == key).scalar()
    if deleted is None:
        raise Conflict("Entity not deleted", f"{meta.name} {entity_id} is not deleted")
    return key, deleted
