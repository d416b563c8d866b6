"""PostgreSQL's connections: a pool per worker process (``db.open_database``
makes it), whose connections read uuid columns as their text, and whose
read path's cursors (``db.read_rows``) read dates and date-times as their text."""
import functools
import time
from collections.abc import Callable
from typing import Any

import peewee
from playhouse.pool import PooledPostgresqlDatabase

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


class _UuidAsText(peewee.Psycopg2Adapter):
    """Peewee registers psycopg2's ``uuid.UUID`` typecaster for every
    connection of the process (``register_uuid`` when it is imported); restsvc
    keeps ids as canonical text (data/columns.py), which is the text
    PostgreSQL sends: its connections read uuid columns as that text, so no
    ``uuid.UUID`` is made per value and turned back into text. Peewee's
    models still see ``uuid.UUID`` (``UUIDField.python_value``), and a
    ``uuid.UUID`` parameter is still sent as one."""

    def connect(self, db: Any, **params: Any) -> Any:
        conn = super().connect(db, **params)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
        from psycopg2 import extensions
        for caster in _uuid_text_casters():
            extensions.register_type(caster, conn)
        return conn


# playhouse has no type information: its pool class is Any to mypy.
class Pool(Statements, PooledPostgresqlDatabase):  # type: ignore[misc, unused-ignore]
    """Peewee's pool sends ``SELECT 1`` on every check-out to see that the
    connection still lives: a round trip per request, as much as a small
    query. A connection given back less than ``PING_AFTER`` seconds ago was
    alive then and is handed out unchecked; one that idled longer is pinged.
    Should the server have gone in that second, the request answers 503 and
    the idle connections are dropped (``is_unavailable``)."""

    PING_AFTER = 1.0
    psycopg2_adapter = _UuidAsText

    def read_dates_as_text(self, cursor: Any) -> None:
        """On this cursor only: the connection's other statements (tokens,
        history, events, Peewee's models) keep psycopg2's ``datetime``
        objects."""
        register, caster = _date_text_caster()
        register(caster, cursor)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._returned: dict[Any, float] = {}       # connection key -> when it was given back (monotonic)

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

    def close_idle(self) -> None:
        super().close_idle()
        self._returned.clear()      # only idle connections have an entry
