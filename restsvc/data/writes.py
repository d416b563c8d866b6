"""The data manager's writes: ``DataManager`` (datamanager.py) is its reads
and these. Validate, save, delete, restore and purge entities under the
caller's permissions, through the one write path (write/): ``Importer``
plans what a body writes, ``Writer`` writes it.
"""
import contextlib
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from ..db import is_sqlite, write_transaction
from ..errors import BadRequest, PreconditionFailed, ValidationFailed, entity_not_found
from ..jsonio import JsonValue
from .access import require
from .read.loader import visible_ids
from .read.reading import one, reading
from .write import softdelete
from .write.hooks import Bind
from .ids import parse_id
from .write.importer import Importer, too_many_entities
from .write.writer import Writer

if TYPE_CHECKING:
    import peewee

    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass
    from ..settings import Settings
    from .access import Access
    from .write.operation import Operation
    from .write.sqlwrite import Statement


class DataWrites:
    """The data manager's writes, with its settings and database."""

    settings: "Settings"
    database: "peewee.Database"
    # The caller's DataAccess of an Access, given to lifecycle hooks that ask for
    # ``data`` (write/hooks.py); set by the application (app.py), which may import
    # data/bound.py (this module may not: bound.py names the data manager).
    bind: "Bind | None" = None

    def validate(self, access: "Access", meta: "MetaClass", body: JsonValue, path: str = "") -> None:
        """Check entity JSON as a save would (permissions, values, references,
        validators) without writing; ValidationFailed lists the violations."""
        importer = Importer(access, self.settings.optimistic_locking, self.settings.max_bulk_size)
        importer.plan(meta, body, path)
        if importer.violations:
            raise ValidationFailed(importer.violations)

    def save(self, access: "Access", meta: "MetaClass", bodies: Sequence[JsonValue],
             entity_ids: Sequence[JsonValue] | None = None, creating: bool | None = None, bulk: bool = False,
             if_match: tuple[int, ...] | None = None,
             answer: "tuple[FetchPlan, bool] | None" = None) -> "list[Operation]":
        """Create or update entities in one transaction; returns the operations
        (each with its ``id`` and the ``values`` written).

        ``entity_ids`` gives the ids from URLs (updates); ``creating`` None means
        upsert by the body's id (create), False means the rows must exist (update).
        ``if_match``: the versions an update's ``If-Match`` names (412 otherwise).
        ``answer``: the plan and ``returnNulls`` a lone create answers along
        (``DataManager.saved_entity``): a write sent as one message
        (``Writer.save_at_once``) reads that answer's row last in it, one round
        trip less (``Operation.answered``)."""
        limit = self.settings.max_bulk_size
        if len(bodies) > limit:
            raise too_many_entities(limit)
        importer = Importer(access, self.settings.optimistic_locking, limit)
        # Checked before the write transaction, so SQLite's single write lock is
        # held only for the writes; what can change in between is caught by the
        # writes themselves (foreign keys, the version and row count of UPDATE).
        if len(bodies) > 1:     # the stored rows they name, read for all at once
            importer.expect(meta, entity_ids or [body.get("id") for body in bodies
                                                 if isinstance(body, dict)])
        operations: list[Operation] = []
        for index, body in enumerate(bodies):
            prefix = f"entities[{index}]." if bulk else ""
            entity_id = entity_ids[index] if entity_ids else None
            if creating is False and entity_id is None:
                entity_id = _required_id(meta, body)
            operations.append(importer.plan(meta, body, prefix, entity_id, creating))
        if importer.violations:
            raise ValidationFailed(importer.violations)
        if if_match is not None:
            for operation in operations:
                _check_versioned(meta, operation.id)
                operation.expected_version = if_match
        # Row rules on writes need the transaction: a refusal after the
        # statement rolls it back.
        alone = operations[0] if len(operations) == 1 and operations[0].is_one_statement \
            and not access.permissions.write_checked(meta.name) else None
        if alone is not None and alone.meta.history is None and not alone.meta.events:
            # No BEGIN/COMMIT around a single statement: SQLite's write lock is
            # then held only while the statement runs, and concurrent writers
            # wait for each other far less.
            Writer(access, self.bind).save(alone)
        elif alone is not None and not is_sqlite(self.database) and _at_once(alone) and \
                Writer(access, self.bind).save_at_once(alone, answer and partial(_answer, access, answer)):
            pass        # its statement, its history item and its event sent as one
        elif len(operations) == 1:      # one row: its statements as they come
            with write_transaction(self.database):
                Writer(access, self.bind).save(operations[0])
        else:
            # Entered by the writer when it first writes: a bulk of creates
            # plans its rows first and holds SQLite's write lock only for its
            # few statements (write/pending.py).
            with contextlib.ExitStack() as stack:
                Writer(access, self.bind).save_all(operations, lambda: stack.enter_context(
                    write_transaction(self.database)))
        return operations

    def delete(self, access: "Access", meta: "MetaClass", entity_ids: Sequence[JsonValue],
               if_match: tuple[int, ...] | None = None) -> None:
        """Delete rows by id, all or nothing; ``if_match`` as for ``save``."""
        require(access, meta, "delete")
        if len(entity_ids) > self.settings.max_bulk_size:
            raise too_many_entities(self.settings.max_bulk_size)
        keys = [parse_id(meta, entity_id) for entity_id in entity_ids]
        with write_transaction(self.database):
            found = visible_ids(access, meta, keys)
            for key, entity_id in zip(keys, entity_ids):
                if key not in found:
                    raise entity_not_found(meta.name, entity_id)
                if hasattr(meta.model, "check_change"):     # e.g. User
                    meta.model.check_change(access, key, None)
            if if_match is not None:
                _check_versioned(meta, entity_ids[0])
            Writer(access, self.bind).delete(meta, keys, if_match)

    def restore(self, access: "Access", meta: "MetaClass", entity_id: str | int) -> str | int:
        """Bring a soft-deleted row back with the children deleted with it;
        its id. 409 when it is not deleted or a live row took its unique key."""
        with write_transaction(self.database):
            key, deleted = softdelete.deleted_row(access, meta, entity_id,
                                                  softdelete.RESTORE, "update")
            Writer(access, self.bind).restore(meta, key, deleted)
        return key

    def purge(self, access: "Access", meta: "MetaClass", entity_id: str | int) -> None:
        """Remove a soft-deleted row for good (409 while other rows refer to it)."""
        with write_transaction(self.database):
            key, _ = softdelete.deleted_row(access, meta, entity_id, softdelete.PURGE, "delete")
            Writer(access, self.bind).delete(meta, [key], purge=True)


def _at_once(operation: "Operation") -> bool:
    """Whether ``Writer.save_at_once`` may try a lone write: a create of a row
    whose id it knows, an update of a versioned row that publishes no events
    (an event is read from the row as written: the UPDATE's WITH would show
    it the row as it was)."""
    meta = operation.meta
    if operation.creating:
        return not meta.database_assigns_id
    return "version" in meta.properties and not meta.events


def _answer(access: "Access", answer: "tuple[FetchPlan, bool]",
            operation: "Operation") -> "Statement | None":
    """The statement reading the row of a lone create's answer along
    ``answer`` (the read path's load by id), or None: a caller who may not
    read it, or a plan read as a page (``reading.one``)."""
    if not operation.creating or not access.permissions.can(operation.meta.name, "read"):
        return None
    plan, return_nulls = answer
    found = one(access, reading(access, operation.meta, plan, return_nulls, tagged=True), operation.key)
    return None if found is None else (found.sql, found.params(access, operation.key))


def _check_versioned(meta: "MetaClass", entity_id: JsonValue) -> None:
    """An entity without a version has no ETag: no If-Match can match it."""
    if "version" not in meta.properties:
        raise PreconditionFailed(meta.name, entity_id)


def _required_id(meta: "MetaClass", body: JsonValue) -> JsonValue:
    if not isinstance(body, dict) or body.get("id") is None:
        raise BadRequest("Required attribute id is not presented",
                         "Required attribute id is not presented")
    return body["id"]
