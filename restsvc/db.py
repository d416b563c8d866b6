"""The database: one Peewee database object bound from a URL.

Models declare ``database = database_proxy``; ``open_database`` binds the proxy
once at startup. One process serves one database.

Connection handling per request (``release``), chosen per engine:
- SQLite: each thread's connection stays open between requests (opening one
  costs more than a small request's query); an idle one holds no lock, and
  ``release`` rolls back what a failed request left open. The WAL is kept
  under a bound (walbound.py).
- PostgreSQL: a pool per worker process (pgpool.py, over Peewee's
  PooledPostgresqlDatabase): connecting costs a round trip and a backend
  process; ``release`` parks the thread's connection after every request: its
  next request takes it back, and another thread may take it when the pool
  is full.
"""
import datetime
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

import peewee
from playhouse import db_url
from playhouse.pool import MaxConnectionsExceeded

from .errors import SettingsError
from .jsonio import dumps
from .pgpool import REPLANNED, Pool
from .privatefiles import ensure_private
from .statements import Statements
from .walbound import WalBound, wal_pragmas
from .writequeue import Queued

log = logging.getLogger("restsvc")

# A row as the driver gives it: the types of its values are the columns'
# (str, int, Decimal, bytes, datetime, None...), which the SQL decides.
Row = tuple[Any, ...]


class Cursor(Protocol):
    """What restsvc reads of a DB-API cursor."""

    @property
    def description(self) -> Any: ...
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Row | None: ...
    def fetchall(self) -> list[Row]: ...
    def __iter__(self) -> Iterator[Row]: ...


def execute(database: peewee.Database, sql: str, params: Sequence[object] | None = None) -> Cursor:
    """``database.execute_sql``, typed (peewee's stubs leave it unannotated). The
    ignores also say ``unused-ignore``: setup.cfg's ``[mypy-restsvc.*]`` flags none."""
    cursor: Cursor = database.execute_sql(sql, params)  # type: ignore[no-untyped-call, unused-ignore]  # stubs: unannotated
    return cursor


def keyed(database: peewee.Database, sql: str) -> str:
    """The text that runs ``sql``, one statement whose plan does not depend on
    its values (a load by id, an INSERT, an UPDATE by id and version), on this
    thread's connection: on PostgreSQL an ``EXECUTE`` of it prepared there
    (pgpool.py), else ``sql``."""
    return cast(Statements, database).prepared(sql)


def read_rows(database: peewee.Database, sql: str, params: Sequence[object] | None = None,
              keyed: bool = False) -> Cursor:
    """A statement of the read path (data/read/: the rows every answer and
    every Python consumer reads): ``execute``, except that on PostgreSQL its
    date and timestamp columns come as the ISO text PostgreSQL sends, which
    is the text SQLite stores, so that the one row shape holds the same
    values on both (data/columns.py converts that text; the answer writes it
    by slicing, data/answer/rawvalues.py). Other statements (tokens, history,
    events, Peewee's models) still get ``datetime`` objects. ``keyed``: the
    statement finds its rows by their keys alone, so that one plan serves
    every value (``keyed``)."""
    cursor: Cursor = cast(Statements, database).execute_sql(sql, params, dates_as_text=True,
                                                           keyed=keyed)
    return cursor
database_proxy = peewee.DatabaseProxy()

SQLITE_PRAGMAS = (
    ("journal_mode", "wal"),
    ("busy_timeout", 5000),
    ("foreign_keys", 1),
)


def display_url(url: str) -> str:
    """The database URL as logs may show it: the password replaced by ``***``
    (anything else of it, the user and host included, is not secret)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()


def open_database(url: str, pool_size: int = 20, sqlite_synchronous: str = "full",
                  sqlite_wal_limit: int = 64 << 20) -> peewee.Database:
    """``sqlite_synchronous``: ``full`` syncs the WAL at every commit, so a
    change that was answered survives a power loss; ``normal`` syncs only at
    checkpoints (faster commits; a power loss may undo the last transactions,
    an application crash cannot). ``sqlite_wal_limit``: the WAL's bound in
    bytes (walbound.py)."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        params = db_url.parse(url)
        path = params.pop("database")
        if not path:
            raise SettingsError("svc.datasource.url: a sqlite URL needs a file path")
        if _is_file(path, params):
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            # It holds password and token hashes: private from its first byte
            # (SQLite would make it 0644, and its -wal and -shm files alike).
            ensure_private(path)
        sqlite = _Sqlite(path, pragmas=SQLITE_PRAGMAS + (
            ("synchronous", sqlite_synchronous), *wal_pragmas(sqlite_wal_limit)), **params)
        if _is_file(path, params):
            sqlite.wal_bound = WalBound(path, sqlite_wal_limit)
        # SQLite's LOWER() folds ASCII only; case-insensitive filters need Unicode.
        sqlite.register_function(_unicode_lower, "unicode_lower", 1, deterministic=True)
        database: peewee.Database = sqlite
    elif scheme in ("postgresql", "postgres"):
        try:
            import psycopg2  # noqa: F401  (the optional driver)
        except ImportError:
            raise SettingsError(
                "svc.datasource.url: PostgreSQL needs the driver: pip install 'restsvc[postgres]'"
            ) from None
        params = db_url.parse(url)
        database = Pool(
            params.pop("database"), max_connections=pool_size, stale_timeout=300,
            timeout=10, **params)
    else:
        raise SettingsError(f"svc.datasource.url: unsupported database URL scheme {scheme!r}")
    database_proxy.initialize(database)
    return database


def _is_file(path: str, params: dict[str, object]) -> bool:
    """Whether a SQLite path names a file on disk (not ``:memory:`` nor a ``file:`` URI)."""
    return path != ":memory:" and not path.startswith("file:") and not params.get("uri")


class _Sqlite(Statements, peewee.SqliteDatabase):
    wal_bound: WalBound | None = None


def _unicode_lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def lower(database: peewee.Database, column: peewee.ColumnBase | str) -> peewee.Function:
    """The lower-cased text that case-insensitive filters compare and the search
    indexes hold: the very same expression in both, or the index goes unused.
    SQLite's own LOWER() folds ASCII only, so there it is the registered
    (deterministic) ``unicode_lower``: Python's ``str.lower``. ``column``: a
    column or expression, or a text (a LIKE pattern) sent as a parameter."""
    return peewee.fn.unicode_lower(column) if is_sqlite(database) else peewee.fn.LOWER(column)


def leading_index_fields(model: type[peewee.Model]) -> list[peewee.Field]:
    """The columns that lead an index: ``index=True``, ``unique=True`` or the first
    column of a ``Meta.indexes`` entry, after a tenant's (model/tenancy.py)."""
    leading: list[peewee.Field] = [field for field in model._meta.sorted_fields if field.index or field.unique]
    for index in model._meta.indexes:
        columns: Sequence[object] = index[0] if isinstance(index, (tuple, list)) \
            else getattr(index, "_expressions", ())
        first = next((column for column in columns if column != "tenantId"), None)
        first = model._meta.fields.get(first) if isinstance(first, str) else first
        if isinstance(first, peewee.Field):
            leading.append(first)
    return list({id(field): field for field in leading}.values())   # Field == is SQL


def lowered_index_sql(database: peewee.Database, model: type[peewee.Model],
                      field: peewee.Field) -> tuple[str, str]:
    """(name, CREATE INDEX statement) of the lower-cased index of one field
    (part of the declared schema, ``restsvc/schema/declared.py``).

    On SQLite that index holds ``unicode_lower``: a connection that writes such
    a column must have the function registered (restsvc's always do; a plain
    ``sqlite3`` shell can read those tables, but not change those columns)."""
    table: str = model._meta.table_name
    column = field.column_name
    name = f"{table}_{column}_lower"[:63]
    def quote(identifier: str) -> str:
        return identifier.join(database.quote)
    if is_sqlite(database):
        expression = f"unicode_lower({quote(column)})"
    else:   # text_pattern_ops: LIKE 'prefix%' can use it whatever the collation
        expression = f"lower({quote(column)}) text_pattern_ops"
    return name, f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({expression})"


def is_sqlite(database: "peewee.Database | peewee.DatabaseProxy") -> bool:
    return isinstance(_bound(database), peewee.SqliteDatabase)


def instant_param(database: peewee.Database) -> "Callable[[object], object]":
    """How a datetime column's parameter is sent: on SQLite as the text
    sqlite3's own adapter would make of it (``sqlite_instant``), else as it is."""
    return sqlite_instant if is_sqlite(database) else _as_is


def sqlite_instant(value: object) -> object:
    """A datetime as SQLite stores it, the text sqlite3's adapter writes
    (``isoformat(" ")``), made here once per instant: the last one is kept,
    and a bulk's rows, history items and events share one (``Writer.now``).
    Any other value as it is."""
    last = _last_instant[0]
    if value is last[0]:
        return last[1]
    if value.__class__ is not datetime.datetime:
        return value
    text = value.isoformat(" ")
    _last_instant[0] = (value, text)     # one assignment: threads see one pair or the other
    return text


def _as_is(value: object) -> object:
    return value


_last_instant: list[tuple[object, object]] = [(None, None)]


def _bound(database: "peewee.Database | peewee.DatabaseProxy") -> peewee.Database:
    """The database itself, also for the proxy models are declared with
    (``Model._meta.database``)."""
    if isinstance(database, peewee.DatabaseProxy):
        bound: peewee.Database = database.obj
        return bound
    return database


def release(database: peewee.Database) -> None:
    """End of a request: no transaction left open; on PostgreSQL the thread's
    connection parked (pgpool.py), or dropped if it broke (on SQLite, the
    process's WAL bound runs from its first request on)."""
    if isinstance(database, _Sqlite) and (bound := database.wal_bound) and not bound.running:
        bound.ensure()
    if not cast(Statements, database).holds_connection():
        return
    try:
        if database.in_transaction():
            database.rollback()
    except (peewee.DatabaseError, peewee.InterfaceError):
        # The connection broke: the pool drops it on close; the request has its answer.
        log.warning("rollback failed; the connection is dropped", exc_info=True)
        if not is_sqlite(database):
            database.close()
        return
    if not is_sqlite(database):
        cast(Pool, database).park()


# SQLite's messages when its busy timeout ran out.
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")


def is_unavailable(exc: BaseException, database: peewee.Database) -> bool:
    """Whether ``exc`` means the database is busy or out of reach for now (503
    with Retry-After), not a fault of the request or the code. A PostgreSQL
    connection failure also drops the pool's idle connections: a restarted
    server closed them all, and each would fail one more request."""
    if isinstance(exc, MaxConnectionsExceeded):
        return True
    if isinstance(exc, peewee.NotSupportedError):
        # A prepared read in a transaction outlived its table's column type:
        # the connection forgot its prepared statements (``Pool.replanned``).
        return REPLANNED in str(exc)
    if not isinstance(exc, (peewee.OperationalError, peewee.InterfaceError)):
        return False
    cause = _driver_error(exc)
    if is_sqlite(database):
        return str(cause).startswith(_SQLITE_BUSY)
    import psycopg2   # only PostgreSQL databases get here, with the driver loaded
    if isinstance(cause, (psycopg2.OperationalError, psycopg2.InterfaceError)):
        cast(Pool, database).close_idle()     # the PostgreSQL database open_database makes
        return True
    return False


def in_list(database: peewee.Database, sql_type: str = "text") -> str:
    """What follows a column to say it is one of the values of one parameter,
    ``list_param``'s: one text and one parameter whatever their number
    (psycopg2 spends about a microsecond quoting each parameter, and
    PostgreSQL keeps one plan of a prepared statement). On PostgreSQL an
    array of ``sql_type`` (``uuid``, ``bigint``, ``text``): the parameter is
    its untyped text, cast once; a typed ``text[]`` cast to ``uuid[]`` would
    be cast again at each row a generic plan filters."""
    p = database.param
    if is_sqlite(database):
        return f"IN (SELECT value FROM json_each({p}))"
    return f"= ANY(CAST({p} AS {sql_type}[]))"


def list_param(database: peewee.Database, values: Sequence[str | int],
               sql_type: str = "text") -> str:
    """The parameter of ``in_list``: SQLite's JSON list, PostgreSQL's array
    text (``sql_type``'s: text quoted, uuid and numbers as they are)."""
    if is_sqlite(database):
        return dumps(values)
    if sql_type != "text":
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join('"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for value in values) + "}"


# Ids per IN list of a statement that reads rows by id: within any database's parameter limit.
IDS_PER_STATEMENT = 500
_Id = TypeVar("_Id")


def id_chunks(ids: Sequence[_Id]) -> Iterator[Sequence[_Id]]:
    """``ids`` in slices of ``IDS_PER_STATEMENT``, one per statement."""
    return (ids[start:start + IDS_PER_STATEMENT] for start in range(0, len(ids), IDS_PER_STATEMENT))


def write_transaction(database: "peewee.Database | peewee.DatabaseProxy") -> peewee._atomic:
    """A transaction that will write. SQLite takes the write lock at BEGIN (one
    that read first could not wait for it), queued for in the process first."""
    bound = _bound(database)
    if is_sqlite(bound):
        return Queued(bound)        # writequeue.py
    return bound.atomic()


def delete_in_batches(database: peewee.Database, model: type[peewee.Model], key: peewee.Field,
                      condition: peewee.Expression, batch: int = 1000) -> int:
    """Delete the rows matching ``condition``, ``batch`` rows (by ``key``) per
    short write transaction, so writers wait for one batch at most; the
    number removed (retention of history and events)."""
    removed = 0
    while True:
        with write_transaction(database):
            doomed = model.select(key).where(condition).order_by(key).limit(batch)
            count = model.delete().where(key.in_(doomed)).execute()
        removed += cast(int, count)
        if count < batch:
            return removed


def exclusive_setup(database: peewee.Database) -> "peewee._atomic | _PostgresSetupLock":
    """A transaction that serializes start-up work of concurrent workers."""
    if is_sqlite(database):
        return write_transaction(database)
    return _PostgresSetupLock(database)


class _PostgresSetupLock:
    _KEY = 7301984  # arbitrary, constant advisory-lock key for schema set-up

    def __init__(self, database: peewee.Database) -> None:
        self.database = database
        self.transaction = database.atomic()

    def __enter__(self) -> "_PostgresSetupLock":
        self.transaction.__enter__()
        execute(self.database, "SELECT pg_advisory_xact_lock(%s)", (self._KEY,))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                 exc_tb: TracebackType | None) -> None:
        return self.transaction.__exit__(exc_type, exc_val, exc_tb)


def _driver_error(exc: BaseException) -> BaseException:
    """The driver's exception that peewee wrapped (as an argument, or as the
    exception it was raised while handling, possibly wrapped twice), else ``exc``."""
    current = exc
    for _ in range(4):
        for candidate in (current.args[0] if current.args else None, current.__cause__,
                          current.__context__):
            if isinstance(candidate, Exception) and not isinstance(candidate, peewee.PeeweeException):
                return candidate
        wrapped = current.__cause__ or current.__context__
        if wrapped is None:
            break
        current = wrapped
    return exc
