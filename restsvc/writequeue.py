"""SQLite's write lock, queued for inside the process first.

SQLite lets a writer that finds the lock taken sleep and try again (its busy
handler: 1, 2, 5, ... up to 100 ms between tries) until ``busy_timeout``: a
writer that has waited long sleeps long, and writers that come later take
the lock in its sleep. Under a steady load some writers so wait for seconds
while most wait for none (issue 41: 0.5 to 4.25 s, close to the 5 s after
which a request answers 503). The threads of one process therefore take a
process lock before ``BEGIN IMMEDIATE`` and give it back after the commit:
they wait on it as the OS wakes them, the moment it is free, and only one
thread of each process polls SQLite's lock against the other processes (a
gunicorn worker or two, the WAL's checkpoint). A transaction begun while the
thread is already in one (a savepoint) does not queue, nor does a thread
already inside a transaction of its own: it could hold the very lock the
queue's holder waits for.

Across processes the queue's holder then takes an exclusive ``flock`` on a
file beside the database (``<database>-writer``), also before ``BEGIN
IMMEDIATE``: the one waiting thread of each process looks at it every few
milliseconds (``_PAUSE``) instead of sleeping up to 100 ms as SQLite's busy
handler does, so a writer of one process no longer waits seconds while the
others' writers take the lock in its sleep. A holder that waited
``busy_timeout`` gives up as SQLite would ("database is locked": 503). Other
programs writing the database (and the WAL's checkpoint) do not take the
file; SQLite's busy handler still queues them.
"""
import fcntl
import os
import sqlite3
import threading
import time
from types import TracebackType
from typing import Any

import peewee

_QUEUE = threading.RLock()
_FILES: dict[str, int] = {}     # database path -> this process's descriptor of its lock file
_PAUSE = 0.002                  # seconds between two looks at a lock file another process holds


def _renew() -> None:
    """A child process starts with a free queue (whatever thread held it in the
    parent) and opens lock files of its own: an inherited descriptor shares
    the parent's lock."""
    global _QUEUE
    _QUEUE = threading.RLock()
    for descriptor in _FILES.values():
        os.close(descriptor)
    _FILES.clear()


os.register_at_fork(after_in_child=_renew)


def _lock_file(database: peewee.Database) -> int | None:
    """This process's descriptor of the database's lock file; None for a
    database in memory (no other process writes it)."""
    path = str(database.database)
    found = _FILES.get(path)
    if found is None:
        if path in ("", ":memory:") or path.startswith("file::memory:") or "mode=memory" in path:
            return None
        found = _FILES[path] = os.open(f"{path}-writer", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                                       0o600)
    return found


def _take(descriptor: int, database: peewee.Database) -> None:
    """The lock file's exclusive lock, waited for at most the connection's
    ``busy_timeout`` (read when the lock is found taken)."""
    deadline = None
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            now = time.monotonic()
            if deadline is None:
                pragma: Any = database.execute_sql("PRAGMA busy_timeout")  # type: ignore[no-untyped-call, unused-ignore]  # stubs: unannotated
                deadline = now + pragma.fetchone()[0] / 1000
            elif now >= deadline:
                # as peewee wraps SQLite's own refusal (db.is_unavailable: 503)
                refusal = sqlite3.OperationalError("database is locked")
                raise peewee.OperationalError(refusal) from refusal
            time.sleep(_PAUSE)


class Queued(peewee._atomic):
    """``database.atomic("IMMEDIATE")`` of a SQLite database, queued for."""

    def __init__(self, database: peewee.Database) -> None:
        super().__init__(database, lock_type="IMMEDIATE")
        self.queue: "threading.RLock | None" = None
        self.file: int | None = None

    def __enter__(self) -> Any:
        if not self.db.in_transaction():
            self.queue = _QUEUE
            self.queue.acquire()
        try:
            if self.queue is not None:
                self.file = _lock_file(self.db)
                if self.file is not None:
                    _take(self.file, self.db)
            return super().__enter__()
        except BaseException:
            self._leave()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> Any:
        try:
            return super().__exit__(exc_type, exc, traceback)
        finally:
            self._leave()

    def _leave(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file = None
        if self.queue is not None:
            self.queue.release()
            self.queue = None
