"""The one write path (ARCHITECTURE.md rule 11).

Every create, update, delete and membership change -- from the Entities API,
bulk requests, compositions and services' ``DataAccess`` -- is written here,
after ``importer.py`` has read and checked the whole graph (the caller's entity
and attribute permissions, row rules on the rows before, values, validators).
``Writer.save`` makes one pass over a planned graph, each concern a named step
in this order:

    rules_before   an update's row rules on the row as it was (rowrules.py)
    audit          the audit fields of an ``audited`` entity: who and when (UTC)
    statement      INSERT, or UPDATE with the version check (locks the row)
    compositions   owned children: the unlisted ones deleted, the listed saved
    memberships    many-to-many links set to exactly the listed members (links
                   to members the caller cannot see are kept: it cannot name them)
    rules_after    row rules on the row as now stored (a refusal rolls it all back)
    history        a HistoryItem of an entity with ``history`` (data/history.py):
                   the row's values before are read ahead of the statement
    events         the outbox row of an entity with ``events`` (events/outbox.py)
    after_save     the model's hook, in the same transaction

``Writer.delete`` does the same for deletes (row rules on the rows as they
are, references checked, history of the rows and their composition
children, their events, memberships removed, the statement, the hook). A feature that
reacts to writes (audit, history, events) is a further step here, never a
second path.
"""
import contextlib

import peewee

from ..errors import (ApiError, BadRequest, Conflict, PreconditionFailed, Text,
                      entity_not_found)
from ..events import outbox
from ..model.fetchplan import ids_only
from . import history, softdelete
from .access import require, utc_now
from .etags import version_is
from .loader import select_rows
from .query import EntityQuery
from .rowrules import check_members, check_rows


class Writer:
    def __init__(self, access, batch=None):
        self.access = access
        # PostgreSQL, one create with history: its INSERT and the item's are
        # sent together by ``flush`` (statements of one Query message run as
        # one transaction: no BEGIN and COMMIT round trips).
        self.batch = batch

    # -- save --------------------------------------------------------------
    def save(self, operation, owner_field=None, owner_id=None):
        """Write one planned operation and what it owns; returns its id."""
        self.rules_before(operation, owner_field)
        self.audit(operation)
        before = self.history_before(operation)
        instance = self.statement(operation, owner_field, owner_id)
        self.compositions(operation)
        self.memberships(operation)
        self.rules_after(operation, owner_field)
        self.history(operation, before)
        self.events(operation)
        self.after_save(operation, instance)
        return operation.id

    def rules_before(self, operation, owner_field):
        if not operation.creating:
            check_rows(self.access, operation.meta, "update", [operation.id], before=True,
                       owners=owner_field is None)

    def rules_after(self, operation, owner_field):
        check_rows(self.access, operation.meta, "create" if operation.creating else "update",
                   [operation.id], owners=owner_field is None)
    def audit(self, operation):
        if not operation.meta.audited:
            return
        now = utc_now()
        values = {"lastModifiedBy": self.access.username, "lastModifiedDate": now}
        if operation.creating:
            values.update(createdBy=values["lastModifiedBy"], createdDate=now)
        operation.values.update(values)
        if operation.instance is not None:
            for name, value in values.items():
                setattr(operation.instance, name, value)

    def flush(self, operation):
        """Send the batched statements at once."""
        sql = "; ".join(text for text, _ in self.batch)
        params = [value for _, values in self.batch for value in values]
        self.batch = None
        with _failures(operation):
            self.access.database.execute_sql(sql, params)

    def statement(self, operation, owner_field, owner_id):
        with _failures(operation):
            if operation.creating:
                return self._insert(operation, owner_field, owner_id)
            values = dict(operation.values)
            if owner_field is not None:
                values[owner_field.name] = owner_id
            self._update(operation, values)
            return None

    def compositions(self, operation):
        if not operation.children:
            return
        if not operation.creating:
            # The UPDATE before holds the parent's row lock (SQLite: the write
            # transaction is BEGIN IMMEDIATE): the children read now are those
            # the last committed replacement left, and stay so until commit.
            for prop, children in operation.children:
                kept = {child.id for child in children}
                removed = [child_id for child_id in child_ids(self.access, prop, operation.id)
                           if child_id not in kept]
                if removed:
                    require(self.access, prop.target, "delete")
                    self.delete(prop.target, removed, with_owner=True)
        for prop, children in operation.children:
            for child in children:
                self.save(child, prop.back_field, operation.id)

    def memberships(self, operation):
        for prop, member_ids in operation.members:
            check_members(self.access, prop, operation.id, member_ids, operation.creating)
            link = prop.link
            if not operation.creating:      # after the UPDATE: the owner's row is locked
                stale = link.through.delete().where(link.owner_field == operation.id)
                visible = EntityQuery(prop.target, self.access).visible_ids(prop.target)
                if visible is not None:
                    stale = stale.where(link.member_field.in_(visible))
                stale.execute()
            if member_ids:
                link.through.insert_many(
                    [{link.owner_field.name: operation.id, link.member_field.name: member}
                     for member in member_ids]).execute()

    def history_before(self, operation):
        """What history compares with: the row's recorded values and its
        collections' member ids, read before anything is written."""
        meta = operation.meta
        if meta.history is None or operation.creating:
            return None
        values = history.old_values(self.access, meta, operation.id) or {}
        collections = {}
        for prop, _ in operation.children:
            collections[prop.name] = child_ids(self.access, prop, operation.id)
        for prop, _ in operation.members:
            link = prop.link
            collections[prop.name] = {row[0] for row in link.through.select(
                link.member_field).where(link.owner_field == operation.id).tuples()}
        return values, collections

    def history(self, operation, before):
        meta = operation.meta
        if meta.history is None:
            return
        values, old_collections = before or (None, {})
        changes = history.changes_of(meta, operation.values, values)
        props = [prop for prop, _ in operation.children] + [prop for prop, _ in operation.members]
        new_ids = dict((prop.name, [child.id for child in children])
                       for prop, children in operation.children)
        new_ids.update((prop.name, ids) for prop, ids in operation.members)
        for prop in history.recorded_collections(meta, props):
            change = history.collection_change(prop.name, old_collections.get(prop.name, ()),
                                               new_ids[prop.name])
            if change is not None:
                changes.append(change)
        if changes or operation.creating:
            kind = "CREATE" if operation.creating else "UPDATE"
            history.record(self.access, [(meta, operation.id, kind, changes)], self.batch)

    def events(self, operation):
        meta = operation.meta
        if meta.events:
            outbox.record(self.access, meta, [operation.id],
                          "CREATE" if operation.creating else "UPDATE",
                          outbox.changed_names(meta, operation), self.batch)

    @staticmethod
    def after_save(operation, instance):
        model = operation.meta.model
        hook = getattr(model, "after_save", None)
        if hook is not None:
            hook(instance or model.get_by_id(operation.id), operation.creating)

    def _insert(self, operation, owner_field, owner_id):
        """INSERT with the SQL text reused per column set (building it costs
        more than running it, and it runs while SQLite holds its write lock).
        Ids the database assigns come back from Peewee's own INSERT."""
        model = operation.meta.model
        instance = operation.instance
        if instance is None:
            instance = model(**operation.values)
        if owner_field is not None:
            setattr(instance, owner_field.name, owner_id)
        if operation.id is not None:
            instance.id = operation.id
        data = instance.__data__
        if operation.meta.database_assigns_id:
            operation.id = operation.meta.row_id(model.insert(**data).execute())
            instance.id = operation.id
            return instance
        fields = [field for field in model._meta.sorted_fields if field.name in data]
        params = [field.db_value(data[field.name]) for field in fields]
        key = ("insert", model, tuple(field.name for field in fields))
        sql = self.access.sql_cache.get(key)
        if sql is None:
            sql, built = model.insert(**data).sql()
            if list(built) != params:
                params = built
            else:
                self.access.sql_cache[key] = sql
        if self.batch is not None:
            self.batch.append((sql, params))
        else:
            self.access.database.execute_sql(sql, params)
        operation.id = operation.meta.row_id(instance.id)
        return instance

    @staticmethod
    def _update(operation, values):
        model = operation.meta.model
        condition = model.id == operation.id
        expected = operation.expected_version
        if expected is not None:
            condition &= version_is(model, expected)
        changed = model.update(**values, version=model.version + 1).where(condition).execute()
        if changed == 0:
            if isinstance(expected, tuple):      # If-Match
                raise PreconditionFailed(operation.meta.name, operation.id)
            if expected is not None:
                raise ApiError("Optimistic lock", Text(
                    "optimisticLock", "Object of class [{entity}] with identifier [{id}]: "
                    "optimistic locking failed", entity=operation.meta.name, id=operation.id))
            raise entity_not_found(operation.meta.name, operation.id)

    # -- delete ------------------------------------------------------------
    def delete(self, meta, ids, expected_versions=None, with_owner=False, purge=False):
        """Delete rows (their compositions and memberships go with them);
        refuse while other rows refer to them. ``expected_versions`` (If-Match):
        only rows at one of them are deleted, else nothing is. ``with_owner``:
        children removed by their owner's save, which checks the owner's rules.
        A ``soft_delete`` entity's rows are marked instead (data/softdelete.py),
        unless purged."""
        check_rows(self.access, meta, "delete", ids, before=True, owners=not with_owner)
        if meta.soft_delete and not purge:
            self.history_of_delete(meta, ids)
            published = self.deleted_with(meta, ids, marking=True)
            marked = softdelete.mark(self.access, meta, ids, versions=expected_versions)
            if expected_versions is not None and marked < len(ids):
                raise PreconditionFailed(meta.name, ids[0] if len(ids) == 1 else ids)
            self.events_of_delete(published)
            return
        model = meta.model
        for ref_meta, fk in _referrers(self.access.metadata, meta):
            if fk.model.select().where(fk.in_(ids)).exists():
                raise Conflict("Delete policy violation",
                               f"Unable to delete {meta.name} because there are references from "
                               f"{ref_meta.name}")
        self.history_of_delete(meta, ids)
        self.events_of_delete(self.deleted_with(meta, ids))
        for link in meta.links:
            link.through.delete().where(link.owner_field.in_(ids)).execute()
        hook = getattr(model, "after_delete", None)
        doomed = list(model.select().where(model.id.in_(ids))) if hook else ()
        condition = model.id.in_(ids)
        if expected_versions is not None:
            condition &= version_is(model, expected_versions)
        try:
            deleted = model.delete().where(condition).execute()
        except peewee.IntegrityError:
            raise Conflict("Delete policy violation",
                           f"Unable to delete {meta.name} because other rows refer to it") from None
        if expected_versions is not None and deleted < len(ids):
            raise PreconditionFailed(meta.name, ids[0] if len(ids) == 1 else ids)
        for instance in doomed:
            hook(instance)

    @staticmethod
    def deleted_with(meta, ids, marking=False):
        """[(entity, ids)] of the rows a delete removes (or marks) that publish
        events: the rows and their composition children."""
        published = [(meta, list(ids))] if meta.events else []
        for prop in meta.properties.values():
            target = prop.target
            if prop.is_collection and prop.back_field is not None and target.events:
                condition = prop.back_field.in_(list(ids))
                if marking:             # only soft-deleted children go with a marked owner
                    if not target.soft_delete:
                        continue
                    condition &= target.model.deletedDate.is_null()
                children = [row[0] for row in target.model.select(target.model.id)
                            .where(condition).tuples()]
                if children:
                    published.append((target, children))
        return published

    def events_of_delete(self, published):
        """DELETE events, from the rows as they are (a marked row: after its marking)."""
        for meta, ids in published:
            outbox.record(self.access, meta, ids, "DELETE", [])

    def history_of_delete(self, meta, ids):
        """DELETE items of the rows and of the composition children that go with them."""
        items = history.deleted_items(meta, ids) if meta.history is not None else []
        for prop in meta.properties.values():
            if prop.is_collection and prop.back_field is not None and \
                    prop.target.history is not None:
                child = prop.target.model
                children = [row[0] for row in child.select(child.id).where(
                    prop.back_field.in_(ids)).tuples()]
                if children:
                    items += history.deleted_items(prop.target, children)
        history.record(self.access, items)


@contextlib.contextmanager
def _failures(operation):
    """What the database refuses, as the client's error."""
    failure = "Entity creation failed" if operation.creating else "Entity update failed"
    try:
        yield
    except peewee.IntegrityError:
        raise BadRequest(failure, "The values conflict with stored data "
                                  "(for example a value that must be unique)") from None
    except peewee.DataError:
        raise BadRequest(failure, "A value does not fit its database column") from None



def child_ids(access, prop, parent_id):
    """The ids of a composition's stored children the caller can see."""
    rows = select_rows(access, prop.target, ids_only(prop.target), sort=None,
                       key_field=prop.back_field, keys=[parent_id])
    return {row["id"] for row in rows}


def _referrers(metadata, meta):
    """(entity, ForeignKeyField) pairs that refer to ``meta``, except the
    back-references of its own compositions (those children go with it)."""
    owned = {prop.back_field for prop in meta.properties.values() if prop.back_field is not None}
    for fk in meta.model._meta.backrefs:
        referrer = metadata.of_model(fk.model)
        if fk not in owned and referrer is not None:
            yield referrer, fk
