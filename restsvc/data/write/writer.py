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
    history        a HistoryItem of an entity with ``history`` (data/write/history.py):
                   the row's values before are read ahead of the statement
                   (a bulk's updates that stand alone: all rows at once,
                   ``Pending.read_before``)
    events         the outbox row of an entity with ``events`` (outbox.py)
    after_save     the model's hook, in the same transaction (hooks.py; a
                   ``before_save`` hook runs before rules_before)

``Writer.delete`` and ``Writer.restore`` run the steps of a delete and of a
restore (an update of a soft-deleted row), kept in removal.py.
``Writer.save_at_once`` (PostgreSQL, a lone create or update) runs
``save``'s steps with their statements collected in ``batch`` and sent as
one by ``flush``. ``Writer.save_all``: a request's creates that stand alone
leave their rows, items and events in ``pending``, its updates that stand
alone their items and events, and their UPDATEs when all of them are such
updates (pending.py). A feature that reacts to writes
(audit, history, events) is a further step here, never a second path; a
step that writes adds its statement to ``batch`` when there is one.
"""
import datetime
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import peewee

from ...db import execute, keyed, read_rows
from . import history, oldvalues, outbox, removal
from .hooks import Bind, Hooks
from ..access import Access, require, utc_now
from .owned import child_ids
from .history import Before
from .pending import Pending
from .shapes import new_instance
from ..read.query import EntityQuery
from .rowrules import check_members, check_rows
from .sqlwrite import Statement, insert_sql, one_statement, refusals, update_refused, update_sql

if TYPE_CHECKING:
    from ...model.entity import Entity
    from ...model.meta import MetaClass
    from .operation import Operation

Id = str | int
T = TypeVar("T")


class _NotAtOnce(Exception):
    """``save_at_once`` cannot decide alone: the transaction path will."""


class Writer:
    def __init__(self, access: Access, bind: Bind | None = None) -> None:
        self.access = access
        self.hooks = Hooks(access, bind)    # the model's lifecycle hooks (hooks.py)
        # ``save_at_once`` (PostgreSQL): the statements of a lone write, sent
        # as one by ``flush``; a step that writes too (history) adds its own.
        self.batch: list[Statement] | None = None
        self.at_version: int | None = None     # the version an UPDATE sent at once applies at
        self.pending: Pending | None = None     # ``save_all``: rows written together
        self.deferred = False                   # the save in progress leaves its row there
        self.later = False                      # and (or only) its history item and event
        self.now: datetime.datetime | None = None   # the instant of the write in progress

    # -- save --------------------------------------------------------------
    def save(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None = None,
             owner_id: Id | None = None) -> Id | None:
        """Write one planned operation and what it owns; returns its id."""
        return self._at_one_instant(lambda _: self._save(operation, owner_field, owner_id))

    def _at_one_instant(self, write: "Callable[[datetime.datetime], T]") -> T:
        """``write(now)`` at the instant of the write in progress, else at a new
        one: what one write leaves (audit fields or deletion marks, history
        items, events) has one instant (``self.now``)."""
        if self.now is not None:
            return write(self.now)
        now = self.now = utc_now()
        try:
            return write(now)
        finally:
            self.now = None

    def _save(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None,
              owner_id: Id | None) -> Id | None:
        if self.pending is not None:
            self.deferred = self.pending.takes(self.access, operation, owner_field)
            self.later = self.deferred or self.pending.keeps(self.access, operation, owner_field)
            if not self.deferred:
                self.pending.flush(self.access, self.now, rows_only=self.later)
        self.hooks.before_save(operation)
        self.rules_before(operation, owner_field)
        self.audit(operation)
        before = self.history_before(operation)
        instance = self.statement(operation, owner_field, owner_id)
        self.compositions(operation)
        self.memberships(operation)
        self.rules_after(operation, owner_field)
        self.history(operation, before, owner_field, owner_id)
        self.events(operation, before)
        self.hooks.after_save(operation, instance)
        return operation.id

    def save_all(self, operations: Sequence["Operation"], begin: Callable[[], object]) -> None:
        """Write a request's operations in order in one transaction (``begin``
        starts it), the rows of those that stand alone together (``Pending``)."""
        self.pending, self.now = Pending(begin), utc_now()
        try:
            self.pending.read_before(self.access, operations)
            for operation in operations:
                self.save(operation)
            self.pending.flush(self.access, self.now)
        finally:
            self.pending, self.deferred, self.later, self.now = None, False, False, None

    def rules_before(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None) -> None:
        if not operation.creating:
            check_rows(self.access, operation.meta, "update", [operation.key], before=True,
                       owners=owner_field is None)

    def rules_after(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None) -> None:
        check_rows(self.access, operation.meta, "create" if operation.creating else "update",
                   [operation.key], owners=owner_field is None)

    def audit(self, operation: "Operation") -> None:
        if not operation.meta.audited:
            return
        values = self.audit_values(operation.creating)
        if self.access.keeps_audit:     # an import: values it gives stay (DataAccess.importing)
            values = {name: value for name, value in values.items()
                      if operation.values.get(name) is None}
        operation.values.update(values)
        if operation.instance is not None:      # as setattr of each field: data, marked dirty
            operation.instance.__data__.update(values)
            operation.instance._dirty.update(values)  # type: ignore[attr-defined]  # peewee-stubs: undeclared

    def audit_values(self, creating: bool) -> dict[str, str | datetime.datetime]:
        """Who and when (UTC) for the audit fields of a create or an update."""
        now = self.now or utc_now()
        values: dict[str, str | datetime.datetime] = {"lastModifiedBy": self.access.username, "lastModifiedDate": now}
        if creating:
            values.update(createdBy=values["lastModifiedBy"], createdDate=now)
        return values

    # -- at once -----------------------------------------------------------
    def save_at_once(self, operation: "Operation",
                     answer: "Callable[[Operation], Statement | None] | None" = None) -> bool:
        """PostgreSQL, a lone create or update (``Operation.is_one_statement``,
        no row rules on writes) of an entity that records its writes: ``save``'s
        steps, their statements sent as one (no BEGIN and COMMIT round trips).
        An update's values and version are read first, unlocked, and it
        applies only at that version (every write through here raises it), so
        its history item's old values are those it replaced. False, with
        nothing written, when the row is missing or changed meanwhile or the
        expected version differs: ``save`` in a transaction then decides.
        ``answer``: a create's statement that reads its answer's row (the read
        path's load by id) once its id is known, sent last in the same message;
        the row is kept in ``operation.answered``."""
        self.batch = []
        try:
            self.save(operation)
            return self.flush(operation, answer and answer(operation))
        except _NotAtOnce:
            return False
        finally:
            self.batch, self.at_version = None, None

    def flush(self, operation: "Operation", answer: Statement | None = None) -> bool:
        """Send the batched statements as one (``sqlwrite.one_statement``),
        then a create's ``answer`` (``save_at_once``); whether the row was written."""
        batch, self.batch = self.batch or [], None
        sql, params = one_statement(self.access, batch, operation.creating)
        database = self.access.database
        with refusals(operation):
            if answer is not None:
                # The statements run as one transaction: the last one sees the row.
                operation.answered = read_rows(database, f"{sql}; {keyed(database, answer[0])}",
                                               params + answer[1]).fetchone()
                return True
            changed = execute(database, sql, params).rowcount
        return operation.creating or changed == 1

    def statement(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None,
                  owner_id: Id | None) -> "Entity | None":
        with refusals(operation):
            if operation.creating:
                return self._insert(operation, owner_field, owner_id)
            values = dict(operation.values)
            if owner_field is not None:
                values[owner_field.name] = owner_id
            self._update(operation, values)
            return None

    def compositions(self, operation: "Operation") -> None:
        if not operation.children:
            return
        if not operation.creating:
            # The UPDATE before holds the parent's row lock (SQLite: the write
            # transaction is BEGIN IMMEDIATE): the children read now are those
            # the last committed replacement left, and stay so until commit.
            for prop, children in operation.children:
                kept = {child.id for child in children}
                removed = [child_id for child_id in child_ids(self.access, prop, operation.key)
                           if child_id not in kept]
                if removed:
                    require(self.access, prop.related, "delete")
                    self.delete(prop.related, removed, with_owner=True)
        for prop, children in operation.children:
            for child in children:
                self.save(child, prop.back_field, operation.id)

    def memberships(self, operation: "Operation") -> None:
        for prop, member_ids in operation.members:
            check_members(self.access, prop, operation.key, member_ids, operation.creating)
            link = prop.link
            assert link is not None         # a many-to-many attribute has its link table
            if not operation.creating:      # after the UPDATE: the owner's row is locked
                stale = link.through.delete().where(link.owner_field == operation.id)
                visible = EntityQuery(prop.related, self.access).visible_ids(prop.related)
                if visible is not None:
                    stale = stale.where(link.member_field.in_(visible))
                stale.execute()
            if member_ids:
                link.through.insert_many(
                    [{link.owner_field.name: operation.id, link.member_field.name: member}
                     for member in member_ids]).execute()

    def history_before(self, operation: "Operation") -> Before | None:
        """What history compares with: the row's recorded values and its
        collections' member ids, read before anything is written; and the
        values before of what an update of an entity with events writes."""
        meta = operation.meta
        if (meta.history is None and not meta.events) or operation.creating:
            return None
        at_once = self.batch is not None
        if at_once and meta.history is None:
            raise _NotAtOnce()      # an UPDATE sent at once needs the version history reads
        read = self.pending.before if self.pending is not None else None
        values = read.get(operation.key) if read is not None else oldvalues.old_values(
            self.access, meta, operation.key, lock=not at_once,
            more=outbox.fields_before(meta, operation.values))
        if at_once:
            expected = operation.expected_version
            if values is None or (expected is not None and values["version"] not in (
                    expected if isinstance(expected, tuple) else (expected,))):
                raise _NotAtOnce()
            version = values["version"]
            assert isinstance(version, int)
            self.at_version = version
        collections: dict[str, set[Id]] = {} if meta.history is None else {
            prop.name: child_ids(self.access, prop, operation.key)
            for prop, _ in operation.children}
        for prop, _ in operation.members if meta.history is not None else ():
            link = prop.link
            assert link is not None
            collections[prop.name] = set(link.through.select(
                link.member_field).where(link.owner_field == operation.id).scalars())
        return values or {}, collections

    def history(self, operation: "Operation", before: Before | None,
                owner_field: peewee.ForeignKeyField | None = None, owner_id: Id | None = None) -> None:
        item = history.item_of_save(operation, before, owner_field, owner_id)
        if item is not None and self.later and self.pending is not None:
            self.pending.items.append(item)
        elif item is not None:
            history.record(self.access, [item], self.batch, self.now)

    def events(self, operation: "Operation", before: Before | None) -> None:
        meta = operation.meta
        if not meta.events:
            return
        previous = None if before is None else outbox.previous_text(
            meta, {name: before[0].get(name) for name in operation.values})
        rows = outbox.event_rows(self.access, meta, [(operation.key, operation.version, previous)],
                                 "CREATE" if operation.creating else "UPDATE",
                                 outbox.changed_names(meta, operation), self.now)
        if self.later and self.pending is not None:
            self.pending.events += rows
            return
        outbox.insert(self.access, rows, self.batch)

    def _insert(self, operation: "Operation", owner_field: peewee.ForeignKeyField | None,
                owner_id: Id | None) -> "Entity":
        """INSERT (``sqlwrite.insert_sql``); ids the database assigns come back
        from Peewee's own INSERT."""
        model = operation.meta.model
        instance = operation.instance
        if instance is None:
            instance = new_instance(model, operation.values)
        if owner_field is not None:
            setattr(instance, owner_field.name, owner_id)
        if operation.id is not None:
            instance.id = operation.id
        data = instance.__data__
        operation.version = data.get("version")
        if operation.meta.database_assigns_id:
            operation.id = operation.meta.row_id(model.insert(**data).execute())
            instance.id = operation.id
            return instance
        sql, params = insert_sql(self.access, model, data)
        if self.deferred and self.pending is not None:
            self.pending.add_row(operation, model, (sql, params))
        elif self.batch is not None:
            self.batch.append((sql, params))
        else:
            execute(self.access.database, sql, params)
        operation.id = operation.meta.row_id(instance.id)
        return instance

    def _update(self, operation: "Operation", values: dict[str, object]) -> None:
        """UPDATE with the version check (``sqlwrite.update_sql``)."""
        meta, database = operation.meta, self.access.database
        expected = operation.expected_version
        if self.deferred and self.pending is not None:      # sent by ``Pending.flush``
            self.pending.add_update(self.access, operation, values)
            return
        if self.batch is not None:      # sent by ``flush``, at the version read before
            if self.at_version is None:
                raise _NotAtOnce()
            self.batch.append(update_sql(self.access, meta.model, operation.id, values,
                                         self.at_version, returning=False))
            return
        sql, params = update_sql(self.access, meta.model, operation.id, values, expected,
                                 returning=meta.events)
        if meta.events:       # its event is written from the version it leaves
            left = execute(database, sql, params).fetchone()
            operation.version = None if left is None else left[0]
            changed = 0 if left is None else 1
        else:
            changed = execute(database, sql, params).rowcount
        if changed == 0:
            raise update_refused(meta.name, operation.key, expected)

    # -- delete and restore (removal.py) -----------------------------------
    def delete(self, meta: "MetaClass", ids: Sequence[Id],
               expected_versions: int | tuple[int, ...] | None = None,
               with_owner: bool = False, purge: bool = False) -> None:
        """Delete rows with what they own (``removal.delete``); a soft-deleted
        entity's rows are marked unless ``purge``."""
        self._at_one_instant(lambda now: removal.delete(
            self.access, self.hooks, meta, ids, expected_versions, with_owner, purge, now))

    def restore(self, meta: "MetaClass", key: Id, deleted: datetime.datetime) -> None:
        """Unmark a soft-deleted row and its children as an update (``removal.restore``)."""
        self._at_one_instant(lambda now: removal.restore(
            self.access, meta, key, deleted, self.audit_values(creating=False), now))
