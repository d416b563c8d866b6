"""How restsvc runs a statement: Peewee's ``execute_sql`` less its overhead,
timed when observability asks for it; the read path's cursors (``db.read_rows``).
The database classes ``db.open_database`` makes (db.py, pgpool.py) are
``Statements``."""
import logging
import math
import time
from collections.abc import Callable
from typing import Any, cast

import peewee


class Statements(peewee.Database):
    """Peewee's ``execute_sql`` less its per-statement overhead (the error
    wrapper on success, the hooks' bookkeeping): the statement runs on the
    thread's cursor, a driver error becomes Peewee's (with Peewee's debug log
    or query hooks on, Peewee's own runs it); timed when ``observe_statements``
    asks for it (observability/statements.py). ``dates_as_text``: a statement
    of the read path (``db.read_rows``), whose cursor reads dates and date-times
    as their ISO text (``read_dates_as_text``). ``keyed``: a statement whose
    plan does not depend on its values (``prepared``)."""

    _record: Callable[[float], None] | None = None     # seconds -> None (the metrics' list)
    _slow: float = math.inf        # seconds from which a statement is logged

    def observe_statements(self, record: Callable[[float], None] | None,
                           slow_seconds: float | None) -> None:
        self._record, self._slow = record, slow_seconds or math.inf

    def execute_sql(self, sql: str, params: Any = None, dates_as_text: bool = False,
                    keyed: bool = False) -> Any:
        record = self._record
        if record is None and self._slow == math.inf:
            return self._run(sql, params, dates_as_text, keyed)
        started = _clock()
        try:
            return self._run(sql, params, dates_as_text, keyed)
        finally:
            seconds = _clock() - started
            if record is not None:
                record(seconds)
            if seconds >= self._slow:
                # The statement's text has placeholders, never the values:
                # Peewee sends those apart, as ``params``.
                statements_log.warning("slow statement (%.1f ms): %s", seconds * 1000,
                                       sql[:SHAPE_MAX])

    def _run(self, sql: str, params: Any, dates_as_text: bool, keyed: bool = False) -> Any:
        if self.query_hooks or _peewee_log.isEnabledFor(logging.DEBUG):
            # Peewee's own (its log, its hooks), on a cursor ``cursor`` makes.
            return self._execute_cursor(sql, params, dates_as_text=dates_as_text)  # type: ignore[attr-defined, unused-ignore]  # peewee-stubs: undeclared
        try:
            cursor = _cursor(self)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
            if dates_as_text:
                self.read_dates_as_text(cursor)
            cursor.execute(self.prepared(sql) if keyed else sql, params or ())
        except Exception as error:
            if keyed and self.replanned(error):
                return self._run(sql, params, dates_as_text, keyed)
            # peewee-stubs do not declare the module's error-translating context manager.
            with peewee.__exception_wrapper__:  # type: ignore[attr-defined]
                raise
        return cursor

    def holds_connection(self) -> bool:
        """Whether this thread has a connection open for its request (``db.release``)."""
        closed: bool = self._state.closed  # type: ignore[attr-defined, unused-ignore]  # peewee-stubs: undeclared
        return not closed

    def cursor(self, named_cursor: Any = None, dates_as_text: bool = False) -> Any:
        cursor = super().cursor(named_cursor)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
        if dates_as_text:
            self.read_dates_as_text(cursor)
        return cursor

    def read_dates_as_text(self, cursor: Any) -> None:
        """Make ``cursor`` read date and date-time columns as their ISO text:
        SQLite's are that text already."""

    def replanned(self, error: Exception) -> bool:
        """Whether a keyed statement that failed with ``error`` is to run again."""
        return False

    def prepared(self, sql: str) -> str:
        """The text that runs ``sql``, a keyed statement (one whose plan does
        not depend on its values), on this thread's connection: ``sql`` itself
        on SQLite, whose driver keeps each connection's statements compiled
        (``sqlite3``'s statement cache)."""
        return sql


def observe_statements(database: peewee.Database, record: Callable[[float], None] | None,
                       slow_seconds: float | None) -> None:
    """``Statements.observe_statements`` of a database ``open_database`` made."""
    cast(Statements, database).observe_statements(record, slow_seconds)


_clock = time.perf_counter
_cursor = peewee.Database.cursor
statements_log = logging.getLogger("restsvc.db")
_peewee_log = logging.getLogger("peewee")
SHAPE_MAX = 2000         # characters of a slow statement's text that are logged
