"""Soft delete: DELETE marks the row, restore unmarks it, purge removes it.

An entity declared with ``soft_delete=True`` has ``deletedDate`` and
``deletedBy``. The write path (data/writer.py) marks instead of deleting
(no reference check: the references stay valid), its soft-deleted
composition children with it at the same instant; every read leaves marked
rows out (data/query.py ``row_condition``) except a to-one reference from a
live row, which stays readable by id. Three grants, specific policies of
resource roles:

    rest.deleted.read      ``?includeDeleted=true`` on list, search, count and load
    rest.deleted.restore   POST /rest/entities/<entity>/<id>/restore
    rest.deleted.purge     POST /rest/entities/<entity>/<id>/purge
"""
import dataclasses

import peewee

from ..db import write_transaction
from ..errors import BadRequest, Conflict, Forbidden, entity_not_found
from . import history
from .access import require, utc_now
from .etags import version_is
from .loader import visible_ids
from .rowrules import check_rows

SEE_DELETED, RESTORE, PURGE = "rest.deleted.read", "rest.deleted.restore", "rest.deleted.purge"


def including_deleted(access):
    """``access`` that also sees soft-deleted rows; 403 without the grant."""
    if not access.permissions.specific(SEE_DELETED):
        raise Forbidden("Forbidden", "Reading deleted entities needs the grant "
                                     f"{SEE_DELETED}")
    return dataclasses.replace(access, include_deleted=True)


def mark(access, meta, ids, when=None, versions=None):
    """Mark live rows deleted, and their soft-deleted composition children;
    how many of ``ids`` were marked. ``versions`` (If-Match): only rows at
    one of them."""
    when = when or utc_now()
    model = meta.model
    condition = model.id.in_(list(ids)) & model.deletedDate.is_null()
    if versions is not None:
        condition &= version_is(model, versions)
    marked = model.update(deletedDate=when, deletedBy=access.username,
                          version=model.version + 1).where(condition).execute()
    for prop, child in _owned(meta):
        children = [row[0] for row in child.model.select(child.model.id).where(
            prop.back_field.in_(list(ids)) & child.model.deletedDate.is_null()).tuples()]
        if children:
            mark(access, child, children, when)
    return marked


def _owned(meta):
    for prop in meta.properties.values():
        if prop.is_collection and prop.back_field is not None and prop.target.soft_delete:
            yield prop, prop.target


def _deleted_row(access, meta, entity_id, grant, operation):
    """The id and deletion instant of a soft-deleted row the caller may act on."""
    if not meta.soft_delete:
        raise BadRequest("Soft delete not used", f"Entity {meta.name} is deleted for good")
    if not access.permissions.specific(grant):
        raise Forbidden("Forbidden", f"This needs the grant {grant}")
    require(access, meta, operation)
    from .importer import parse_id      # importer -> writer -> this module
    key = parse_id(meta, entity_id)
    if not visible_ids(dataclasses.replace(access, include_deleted=True), meta, [key]):
        raise entity_not_found(meta.name, entity_id)
    model = meta.model
    deleted = model.select(model.deletedDate).where(model.id == key).scalar()
    if deleted is None:
        raise Conflict("Entity not deleted", f"{meta.name} {entity_id} is not deleted")
    return key, deleted


def restore(access, meta, entity_id):
    """Unmark a row and the children deleted with it; 409 when not deleted
    or when a live row now holds one of its unique keys."""
    with write_transaction(access.database):
        key, deleted = _deleted_row(access, meta, entity_id, RESTORE, "update")
        # A restore is an update: the caller's write rules hold on the row as
        # it was (deleted) and as it is again.
        check_rows(dataclasses.replace(access, include_deleted=True), meta, "update", [key],
                   before=True)
        items = []
        try:
            _unmark(access, meta, [key], deleted, items)
        except peewee.IntegrityError:
            raise Conflict("Unique key taken", f"A live {meta.name} now holds a unique value "
                                               f"of {entity_id}; change it first") from None
        check_rows(access, meta, "update", [key])
        history.record(access, items)
    return key


def _unmark(access, meta, ids, deleted, items):
    model = meta.model
    # An update like any other: a new version, and who and when for audited rows.
    audit = {"lastModifiedBy": access.username, "lastModifiedDate": utc_now()} \
        if meta.audited else {}
    model.update(deletedDate=None, deletedBy=None, version=model.version + 1, **audit) \
        .where(model.id.in_(ids) & (model.deletedDate == deleted)).execute()
    if meta.history is not None:
        change = [{"name": "deletedDate", "oldValue": history.json_value(
            meta.properties["deletedDate"], deleted), "newValue": None}]
        items += [(meta, meta.row_id(key), "RESTORE", change) for key in ids]
    for prop, child in _owned(meta):
        children = [row[0] for row in child.model.select(child.model.id).where(
            prop.back_field.in_(ids) & (child.model.deletedDate == deleted)).tuples()]
        if children:
            _unmark(access, child, [child.row_id(key) for key in children], deleted, items)


def purge(access, meta, entity_id, writer):
    """Remove a soft-deleted row for good (409 while other rows refer to it)."""
    with write_transaction(access.database):
        key, _ = _deleted_row(access, meta, entity_id, PURGE, "delete")
        writer.delete(meta, [key], purge=True)
