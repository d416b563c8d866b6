"""The rows a write reaches besides the ones it names: a composition's
stored children (at every depth) and the entities that refer to a row."""
from ...model.fetchplan import ids_only
from ..read.loader import select_rows
from ..read.request import Load


def child_ids(access, prop, parent_id):
    """The ids of a composition's stored children the caller can see."""
    rows = select_rows(access, prop.target, ids_only(prop.target),
                       Load(key_field=prop.back_field, keys=[parent_id]))
    return {row["id"] for row in rows}


def composed(meta, ids, soft=False, deleted=None):
    """[(entity, ids)]: the rows and their composition children at every
    depth, parents first. ``soft``: what a soft delete marks (live rows, and
    only children that are soft-deleted too); ``deleted``: what a restore
    brings back (children of soft-deleted entities marked at that instant);
    neither: what a delete removes (every child)."""
    found = [(meta, list(ids))]
    for prop in meta.properties.values():
        child = prop.target
        if not (prop.is_collection and prop.back_field is not None) or \
                ((soft or deleted is not None) and not child.soft_delete):
            continue
        model = child.model
        condition = prop.back_field.in_(list(ids))
        if soft:
            condition &= model.deletedDate.is_null()
        elif deleted is not None:
            condition &= model.deletedDate == deleted
        children = [child.row_id(row[0]) for row in model.select(model.id).where(condition).tuples()]
        if children:
            found += composed(child, children, soft, deleted)
    return found


def referrers(metadata, meta):
    """(entity, ForeignKeyField) pairs that refer to ``meta``, except the
    back-references of its own compositions (those children go with it)."""
    owned = {prop.back_field for prop in meta.properties.values() if prop.back_field is not None}
    for fk in meta.model._meta.backrefs:
        referrer = metadata.of_model(fk.model)
        if fk not in owned and referrer is not None:
            yield referrer, fk
