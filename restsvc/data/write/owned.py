"""The rows a write reaches besides the ones it names: a composition's
stored children (at every depth) and the entities that refer to a row."""
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import peewee

from ...model.fetchplan import ids_only
from ..access import Access
from ..columns import among, row_id
from ..read.loader import select_rows
from ..read.request import Load

if TYPE_CHECKING:
    import datetime

    from ...model.metadata import MetaClass, Metadata, MetaProperty

# What a write reaches, entity by entity: (entity, the ids of its rows).
Reached = list[tuple["MetaClass", list[str | int]]]


def child_ids(access: Access, prop: "MetaProperty", parent_id: str | int) -> set[str | int]:
    """The ids of a composition's stored children the caller can see."""
    rows = select_rows(access, prop.related, ids_only(prop.related),
                       Load(key_field=prop.back_field, keys=[parent_id]))
    return set(map(row_id(prop.related), rows))


def composed(meta: "MetaClass", ids: Collection[str | int], soft: bool = False,
             deleted: "datetime.datetime | None" = None) -> Reached:
    """[(entity, ids)]: the rows and their composition children at every
    depth, parents first. ``soft``: what a soft delete marks (live rows, and
    only children that are soft-deleted too); ``deleted``: what a restore
    brings back (children of soft-deleted entities marked at that instant);
    neither: what a delete removes (every child)."""
    found: Reached = [(meta, list(ids))]
    for prop in meta.properties.values():
        if not (prop.is_collection and prop.back_field is not None):
            continue
        child = prop.related
        if (soft or deleted is not None) and not child.soft_delete:
            continue
        model = child.model
        condition = among(prop.back_field, ids)
        deleted_date = model._meta.fields["deletedDate"]
        if soft:
            condition &= deleted_date.is_null()
        elif deleted is not None:
            condition &= deleted_date == deleted
        children = [child.row_id(key) for key in model.select(model.id).where(condition).scalars()]
        if children:
            found += composed(child, children, soft, deleted)
    return found


def referrers(metadata: "Metadata", meta: "MetaClass"
              ) -> Iterator[tuple["MetaClass", peewee.ForeignKeyField]]:
    """(entity, ForeignKeyField) pairs that refer to ``meta``, except the
    back-references of its own compositions (those children go with it)."""
    owned = {prop.back_field for prop in meta.properties.values() if prop.back_field is not None}
    for fk in meta.model._meta.backrefs:
        referrer = metadata.of_model(fk.model)
        if fk not in owned and referrer is not None:
            yield referrer, fk
