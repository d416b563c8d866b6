"""PostgreSQL's connections: a pool per worker process (``db.open_database``
makes it), whose connections read uuid columns as their text, and whose
read path's cursors (``db.read_rows``) read dates and date-times as their text;
each connection prepares its keyed statements (``db.keyed``) once."""
import functools
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import peewee
from playhouse.pool import MaxConnectionsExceeded, PooledPostgresqlDatabase

from .statements import Statements

UUID_OID, _UUID_ARRAY_OID = 2950, 2951      # PostgreSQL's uuid and uuid[] (type_code)
_DATE_OID, _TIMESTAMP_OID = 1082, 1114      # date, timestamp (without time zone)


@functools.cache
def _uuid_text_casters() -> tuple[Any, Any]:
    """psycopg2 typecasters that read uuid and uuid[] as their text (the
    driver's own C caster of text), built once."""
    from psycopg2 import extensions
    text = extensions.new_type((UUID_OID,), "RESTSVC_UUID_TEXT", extensions.UNICODE)
    return text, extensions.new_array_type((_UUID_ARRAY_OID,), "RESTSVC_UUID_TEXT[]", text)


@functools.cache
def _date_text_caster() -> tuple[Callable[[Any, Any], None], Any]:
    """(psycopg2's ``register_type``, a typecaster that reads date and
    timestamp as their text: ``2024-01-31``, ``2024-01-31 09:00:00[.f]``,
    the fraction without trailing zeros; psycopg2 keeps its connections'
    DateStyle ISO), built once."""
    from psycopg2 import extensions
    return extensions.register_type, extensions.new_type(
        (_DATE_OID, _TIMESTAMP_OID), "RESTSVC_DATE_TEXT", extensions.UNICODE)


@functools.cache
def _connection_class() -> type:
    """psycopg2's connection, with the keyed statements prepared on it
    (``Pool.prepared``): they live and go with the connection."""
    from psycopg2 import extensions

    class Connection(extensions.connection):  # type: ignore[misc, unused-ignore]  # psycopg2: untyped
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.prepared: dict[str, str] = {}      # statement -> the EXECUTE that runs it
            self.seen: set[str] = set()             # keyed statements run once, not prepared
            self.made = 0                           # statements prepared so far (their names)
    return Connection


def _numbered(sql: str) -> tuple[str, int]:
    """(``sql`` with PostgreSQL's numbered parameters for psycopg2's ``%s``
    and ``%`` for ``%%``, how many parameters it has)."""
    count = 0
    def number(found: re.Match[str]) -> str:
        nonlocal count
        if found.group(1) == "%":
            return "%"
        count += 1
        return f"${count}"
    return _PLACEHOLDER.sub(number, sql), count


_PLACEHOLDER = re.compile(r"%([%s])")
REPLANNED = "cached plan must not change result type"     # PostgreSQL's message


def _forget_prepared(conn: Any, deallocate: bool = True) -> None:
    """The connection's prepared statements dropped (``DEALLOCATE ALL``; not
    in a failed transaction, where their names stay taken: the next are new)."""
    if deallocate:
        with conn.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")
    conn.prepared.clear()
    conn.seen.clear()


class _UuidAsText(peewee.Psycopg2Adapter):
    """Peewee registers psycopg2's ``uuid.UUID`` typecaster for every
    connection of the process (``register_uuid`` when it is imported); restsvc
    keeps ids as canonical text (data/columns.py), which is the text
    PostgreSQL sends: its connections read uuid columns as that text, so no
    ``uuid.UUID`` is made per value and turned back into text. Peewee's
    models still see ``uuid.UUID`` (``UUIDField.python_value``), and a
    ``uuid.UUID`` parameter is still sent as one."""

    def connect(self, db: Any, **params: Any) -> Any:
        params.setdefault("connection_factory", _connection_class())
        conn = super().connect(db, **params)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
        from psycopg2 import extensions
        for caster in _uuid_text_casters():
            extensions.register_type(caster, conn)
        return conn


class _ThreadState(peewee._ConnectionLocal):  # type: ignore[misc, name-defined, unused-ignore]  # peewee-stubs: undeclared
    """Peewee's per-thread connection state, and whether the thread's
    connection is parked (``Pool.park``)."""

    parked = False


# playhouse has no type information: its pool class is Any to mypy.
class Pool(Statements, PooledPostgresqlDatabase):  # type: ignore[misc, unused-ignore]
    """Peewee's pool, with two savings on every request.

    Peewee's pool sends ``SELECT 1`` on every check-out to see that the
    connection still lives: a round trip per request, as much as a small
    query. A connection given back less than ``PING_AFTER`` seconds ago was
    alive then and is handed out unchecked; one that idled longer is pinged.
    Should the server have gone in that second, the request answers 503 and
    the idle connections are dropped (``is_unavailable``).

    At the end of a request (``db.release``) the thread's connection is
    parked, not checked in: the thread's next request takes it back at its
    first statement (``is_closed``) with no check-out and no check-in
    (Peewee's connect and close, the pool's heap and checks: a tenth of a
    get's instructions on PostgreSQL). A parked connection stays counted
    as in use, so ``svc.datasource.pool-size`` still bounds the connections
    open at once; a thread that finds the pool full takes the connection
    parked longest, whose thread then finds it gone and checks out another."""

    PING_AFTER = 1.0
    PREPARED_MAX = 200      # keyed statements prepared (and seen once) per connection
    psycopg2_adapter = _UuidAsText

    def read_dates_as_text(self, cursor: Any) -> None:
        """On this cursor only: the connection's other statements (tokens,
        history, events, Peewee's models) keep psycopg2's ``datetime``
        objects."""
        register, caster = _date_text_caster()
        register(caster, cursor)

    def prepared(self, sql: str) -> str:
        """A keyed statement is prepared on the connection at its second use
        (one used once costs no round trip more), and then runs as ``EXECUTE``
        (psycopg2 still quotes the values): after five runs PostgreSQL keeps
        one generic plan, and parses and plans it no more (half of its CPU for
        a get by id). Only keyed statements (the load by id, the rows under a
        page by their keys, a lone write's INSERTs and UPDATE): a filter's best plan depends on its values (a rare
        prefix or a common one), which a generic plan would not see. An
        application makes as many as its plans and written column sets (inline
        plans and partial updates too): past ``PREPARED_MAX`` on one connection
        all are dropped and prepared anew as they come. ``PREPARE`` outlives a
        rollback: one made in a transaction that failed stays prepared."""
        conn = self.connection()  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
        prepared: dict[str, str] = conn.prepared
        text = prepared.get(sql)
        if text is not None:
            return text
        seen: set[str] = conn.seen
        if sql not in seen:
            if len(seen) >= self.PREPARED_MAX:
                seen.clear()
            seen.add(sql)
            return sql
        if len(prepared) >= self.PREPARED_MAX:
            _forget_prepared(conn)
        name = f"restsvc_{conn.made}"
        numbered, count = _numbered(sql)
        with conn.cursor() as cursor:
            cursor.execute(f"PREPARE {name} AS {numbered}")
        conn.made += 1
        text = prepared[sql] = f"EXECUTE {name} ({', '.join(['%s'] * count)})" if count \
            else f"EXECUTE {name}"
        return text

    def replanned(self, error: Exception) -> bool:
        """A keyed read whose table changed a column's type since it was
        prepared (``restsvc migrate`` beside a running instance) fails in
        PostgreSQL ("cached plan must not change result type"): the connection
        forgets its prepared statements, and one outside a transaction runs
        again (it changed nothing); one in a transaction fails it, and the
        request answers 503 (``db.is_unavailable``)."""
        conn = self._state.conn
        if REPLANNED not in str(error) or conn is None:
            return False
        idle: bool = self._adapter.txn_status(conn) == self._adapter.txn_idle
        _forget_prepared(conn, deallocate=idle)
        return idle

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._state = _ThreadState()
        self._returned: dict[Any, float] = {}       # connection key -> when it was given back (monotonic)
        self._parked: dict[int, Any] = {}           # thread ident -> its parked connection

    def park(self) -> None:
        """The end of a request on this thread, with no transaction open: its
        connection stays the thread's, and another thread may take it."""
        state = self._state
        if state.closed or state.parked:
            return
        conn = state.conn
        with self._pool_lock:
            self._parked[threading.get_ident()] = conn
            self._returned[self.conn_key(conn)] = time.monotonic()
            self._pool_available.notify()
        state.parked = True

    def holds_connection(self) -> bool:
        state = self._state
        return not (state.closed or state.parked)

    def is_closed(self) -> bool:
        state = self._state
        if state.closed:        # (first: Peewee asks before this pool's state is made)
            return True
        return state.parked and self._unpark(state)

    def connect(self, reuse_if_open: bool = False) -> bool:
        state = self._state
        if state.parked and not self._unpark(state):
            return True         # its parked connection, taken back
        connected: bool = super().connect(reuse_if_open)
        return connected

    def close(self) -> bool:
        state = self._state
        if state.parked and self._unpark(state):
            return False        # taken by another thread or dropped: nothing to close
        closed: bool = super().close()
        return closed

    def _unpark(self, state: _ThreadState) -> bool:
        """Whether the thread's parked connection is gone (taken by another
        thread, dropped by ``close_idle``, dead or stale): then the thread
        has none, and checks one out at its next statement."""
        state.parked = False
        with self._pool_lock:
            conn = self._parked.pop(threading.get_ident(), None)
            if conn is not None and self._usable(conn):
                return False
        state.reset()
        return True

    def _usable(self, conn: Any) -> bool:
        """Whether a parked connection may serve again (checked as a checked-in
        one is, ``_is_closed``); if not, it is closed and no longer counted
        (under the pool's lock)."""
        key = self.conn_key(conn)
        counted = self._in_use.get(key)
        if counted is not None and not self._is_stale(counted.timestamp) and not self._is_closed(conn):
            return True
        self._in_use.pop(key, None)
        self._returned.pop(key, None)
        self._close_raw(conn)
        return False

    def _connect(self) -> Any:
        with self._pool_lock:
            # Parked by an ended thread whose ident this one has, if any.
            conn = self._parked.pop(threading.get_ident(), None)
            if conn is not None and self._usable(conn):
                return conn
            try:
                return super()._connect()
            except MaxConnectionsExceeded:
                if not self._parked:
                    raise
                conn = self._parked.pop(next(iter(self._parked)))       # parked longest
                return conn if self._usable(conn) else super()._connect()

    def _is_closed(self, conn: Any) -> bool:
        returned = self._returned.pop(self.conn_key(conn), None)
        if returned is not None and time.monotonic() - returned < self.PING_AFTER \
                and not conn.closed and self._adapter.txn_status(conn) == self._adapter.txn_idle:
            return False
        closed: bool = super()._is_closed(conn)
        return closed

    def _close(self, conn: Any, close_conn: bool = False) -> None:
        super()._close(conn, close_conn)
        if not close_conn and not conn.closed:
            self._returned[self.conn_key(conn)] = time.monotonic()

    def counts(self) -> tuple[int, int]:
        """(connections serving a request, connections idle: checked in or parked)."""
        with self._pool_lock:
            parked = len(self._parked)
            return len(self._in_use) - parked, len(self._connections) + parked

    def close_idle(self) -> None:
        """The connections checked in and the parked ones (their threads find
        them gone)."""
        with self._pool_lock:
            super().close_idle()
            for conn in self._parked.values():
                self._in_use.pop(self.conn_key(conn), None)
                self._close_raw(conn)
            self._parked.clear()
            self._returned.clear()      # only idle connections have an entry
