"""A bulk's rows written together (``Writer.save_all``, writer.py): the
statement, history and events steps of each create that stands alone leave
their rows here, and ``flush`` writes them with as few statements as
``sqlwrite.many_rows`` allows, per table:

    entity rows    one multi-row INSERT per column set and MAX_PARAMS parameters
    history items  one per MAX_PARAMS // 8 items
    events         one per MAX_PARAMS // 7 events

For 1,000 demo customers of one column set: one statement per table.

A create stands alone (``takes``) when nothing in its own steps reads what
it writes: a top-level create (not a composition child) of a row whose id it
knows, written by one INSERT (``Operation.is_one_statement``: no children,
memberships or ``after_save`` hook), of an entity without row rules on
writes (they read the row back). An update that would stand alone so
(``keeps``: a change by filter's, a bulk's) runs its UPDATE at once, after
the rows pending before it, and leaves its history item and event here.
Any other save first flushes what is pending, so every write sees the rows
written before it, in order, and the transaction holds the same rows, items
and events as one save at a time.
The rows a bulk of one entity updates are locked in id order when the
transaction starts (``read_before``); when it updates distinct rows only and
all of them stand alone, that read also takes the values their items and
events compare with and the rows' versions, one statement per 500 rows, and
their UPDATEs then wait here too (``add_update``: each row's expected
version checked against the one read) and go together per column set
(``sqlwrite.update_rows``):

    entity rows    rows that take the same values (a change by filter's):
                   one UPDATE ... WHERE id IN (...); else one
                   UPDATE ... FROM (VALUES ...) per MAX_PARAMS parameters

The transaction itself starts at the first ``flush``: a bulk of creates that
stand alone is planned (audit values, history items, events) before SQLite's
write lock is taken, and holds it only for its few statements.
"""
import datetime
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import peewee

from . import history, oldvalues, outbox
from .sqlwrite import Statement, insert_rows, refusals, update_refused, update_rows, update_sql

if TYPE_CHECKING:
    from ..access import Access
    from .operation import Operation


class Pending:
    """What a bulk's standing-alone creates left to write."""

    def __init__(self, begin: Callable[[], object]) -> None:
        self.begin: Callable[[], object] | None = begin     # the transaction, until started
        # (model, one-row INSERT text) -> rows' parameters, in the order first seen
        self.rows: dict[tuple[type[peewee.Model], str], list[list[object]]] = {}
        self.items: list[history.HistoryEntry] = []
        self.events: list[list[object]] = []
        # (model, one-row UPDATE text) -> (the columns it sets, each row's parameters)
        self.updates: dict[tuple[type[peewee.Model], str], tuple[tuple[str, ...], list[list[object]]]] = {}
        self.first: "Operation | None" = None      # whose refusal a failed statement answers
        # ``read_before``: id -> the row's values before (oldvalues.old_values), or None
        self.before: dict[str | int, dict[str, object]] | None = None

    @staticmethod
    def keeps(access: "Access", operation: "Operation",
              owner_field: peewee.ForeignKeyField | None) -> bool:
        """Whether ``operation``'s history item and event may wait for
        ``flush`` (see above): a top-level create or update written by one
        statement, without row rules on writes."""
        return (owner_field is None and not access.permissions.write_checked(operation.meta.name)
                and operation.is_one_statement)    # its hooks, asked last (a model's attributes)

    def takes(self, access: "Access", operation: "Operation",
              owner_field: peewee.ForeignKeyField | None) -> bool:
        """Whether ``operation``'s statement may wait too: a create whose id
        it knows, or an update of a row ``read_before`` read."""
        if operation.creating:
            return (not operation.meta.database_assigns_id
                    and self.keeps(access, operation, owner_field))
        return self.before is not None and self.keeps(access, operation, owner_field)

    def read_before(self, access: "Access", operations: "Sequence[Operation]") -> None:
        """The rows a bulk of one entity updates (a change by filter's, a bulk
        PUT's or POST's): locked together in id order as soon as the
        transaction starts (on PostgreSQL: concurrent bulks naming the same
        rows wait for each other instead of deadlocking). When they are
        distinct rows, all updated and all standing alone, with the values
        their history items and events compare with
        (``oldvalues.old_values_of``), where each update read its own row."""
        meta = operations[0].meta if len(operations) > 1 else None
        if meta is None or any(operation.meta is not meta for operation in operations):
            return
        keys = [operation.key for operation in operations if not operation.creating]
        if not keys:
            return      # creates only: the transaction waits for their rows
        # A row updated twice (its second read follows the first) or updates
        # among creates (the body's order decides what a unique key meets):
        # written one by one, in order, after the locks.
        alone = len(keys) == len(operations) == len(set(keys)) and all(
            self.keeps(access, operation, None) for operation in operations)
        if not alone:
            if access.database.for_update:
                self.flush(access, rows_only=True)      # the transaction starts
                oldvalues.lock_rows(access, meta, list(dict.fromkeys(keys)))
            return
        self.flush(access, rows_only=True)      # the transaction starts: the rows as it holds them
        # every column an event keeps: the rows' values and the audit fields they will write
        self.before = oldvalues.old_values_of(access, meta, keys, outbox.fields_before(
            meta, meta.model._meta.fields) if meta.events else ())

    def add_update(self, access: "Access", operation: "Operation", values: dict[str, object]) -> None:
        """The UPDATE of a row ``read_before`` read (and locked): its expected
        version checked against the one read, the version it leaves known
        from it, and its statement left to ``flush``, which sends the updates
        of one column set together (``sqlwrite.update_rows``)."""
        assert self.before is not None
        meta, key, expected = operation.meta, operation.key, operation.expected_version
        version = (self.before.get(key) or {}).get("version")
        if not isinstance(version, int) or expected is not None and version not in (
                expected if isinstance(expected, tuple) else (expected,)):
            raise update_refused(meta.name, key, expected)
        operation.version = version + 1
        model = meta.model
        sql, params = update_sql(access, model, key, values, None, returning=False)
        if self.first is None:
            self.first = operation
        self.updates.setdefault((model, sql), (tuple(values), []))[1].append(params)

    def add_row(self, operation: "Operation", model: type[peewee.Model],
                statement: Statement) -> None:
        if self.first is None:
            self.first = operation
        sql, params = statement
        self.rows.setdefault((model, sql), []).append(params)

    def flush(self, access: "Access", now: "datetime.datetime | None" = None,
              rows_only: bool = False) -> None:
        """Start the transaction if not yet, and write what is pending: entity
        rows first (history items and events name them), then items and
        events in the order of the saves (``rows_only``: they wait on)."""
        if self.begin is not None:
            begin, self.begin = self.begin, None
            begin()
        rows, self.rows = self.rows, {}
        updates, self.updates = self.updates, {}
        first, self.first = self.first, None
        if rows or updates:
            assert first is not None
            with refusals(first):
                for (_, sql), params in rows.items():
                    insert_rows(access, sql, params)
                for (model, _), (names, params) in updates.items():
                    update_rows(access, model, names, params)
        if rows_only:
            return
        items, self.items = self.items, []
        history.record(access, items, now=now)
        events, self.events = self.events, []
        if events:
            outbox.insert(access, events)
