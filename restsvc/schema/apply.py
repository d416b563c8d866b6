"""Running a plan: under a lock, in one transaction, with a backup first when
SQLite rebuilds a table.

The lock makes check-and-apply atomic across processes: PostgreSQL takes a
transaction-scoped advisory lock, SQLite an exclusive transaction. Either
waits at most ``lock_timeout`` seconds (also for the table locks DDL needs
behind a long transaction) and then fails with a clear message.
"""
import datetime
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import peewee

from ..db import SQLITE_PRAGMAS, execute, is_sqlite
from ..privatefiles import ensure_private
from . import history
from .plan import Step

_LOCK_KEY = 7301984     # the advisory-lock key restsvc's schema work shares


class MigrationError(Exception):
    """A migration that cannot run or failed; the message says which step and why."""


@contextmanager
def migration_lock(database: peewee.Database, lock_timeout: float) -> Iterator[None]:
    """One transaction holding the schema lock; commits when the block ends."""
    try:
        if is_sqlite(database):
            with _sqlite_lock(database, lock_timeout):
                yield
        else:
            with database.atomic():
                execute(database, f"SET LOCAL lock_timeout = '{int(lock_timeout * 1000)}ms'")
                execute(database, "SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                yield
    except peewee.OperationalError as exc:
        if _is_lock_timeout(exc):
            raise MigrationError(
                f"the database stayed locked by another transaction for {lock_timeout:g} s "
                f"(--lock-timeout); nothing was changed") from None
        raise


@contextmanager
def _sqlite_lock(database: peewee.Database, lock_timeout: float) -> Iterator[None]:
    # Foreign keys are checked once, at the end (a rebuild drops the old table
    # first); the pragma cannot change inside a transaction.
    execute(database, f"PRAGMA busy_timeout = {int(lock_timeout * 1000)}")
    execute(database, "PRAGMA foreign_keys = OFF")
    try:
        with database.atomic("EXCLUSIVE"):
            yield
            problems = execute(database, "PRAGMA foreign_key_check").fetchall()
            if problems:
                raise MigrationError(f"foreign key check failed after the migration: "
                                     f"{problems[:5]}; nothing was changed")
    finally:
        execute(database, f"PRAGMA busy_timeout = {dict(SQLITE_PRAGMAS)['busy_timeout']}")
        execute(database, "PRAGMA foreign_keys = ON")


def _is_lock_timeout(exc: Exception) -> bool:
    text = str(exc)
    return "database is locked" in text or "lock timeout" in text


def backup_sqlite(database: peewee.Database) -> str:
    """A copy of the database file beside it, ``<file>.backup-<UTC timestamp>``."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    file: str = database.database
    path = f"{file}.backup-{stamp}"
    # The copy holds what the database holds: as private from its first byte.
    ensure_private(path)
    # Read through a connection of its own: in WAL mode it sees the last
    # committed state while this process holds the write lock.
    source, target = sqlite3.connect(file), sqlite3.connect(path)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return path


def apply_steps(database: peewee.Database, steps: Sequence[Step], name: str,
                backup: str | None = None) -> None:
    """Runs the steps and records them; the caller's transaction holds them all."""
    for number, step in enumerate(steps, 1):
        for sql in step.sql:
            try:
                execute(database, sql)
            except peewee.DatabaseError as exc:
                if _is_lock_timeout(exc):
                    raise       # migration_lock says how long it waited
                after = (f"the transaction was rolled back; a backup is at {backup}" if backup
                         else "the transaction was rolled back: nothing was changed")
                raise MigrationError(f"step {number} ({step.description}) failed: "
                                     f"{str(exc).strip()}; {after}") from None
    history.record(name, "\n\n".join(step.text() for step in steps))
