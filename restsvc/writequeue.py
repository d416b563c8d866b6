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
"""
import os
import threading
from types import TracebackType
from typing import Any

import peewee

_QUEUE = threading.RLock()


def _renew() -> None:
    """A child process starts with a free queue (whatever thread held it in the parent)."""
    global _QUEUE
    _QUEUE = threading.RLock()


os.register_at_fork(after_in_child=_renew)


class Queued(peewee._atomic):
    """``database.atomic("IMMEDIATE")`` of a SQLite database, queued for."""

    def __init__(self, database: peewee.Database) -> None:
        super().__init__(database, lock_type="IMMEDIATE")
        self.queue: "threading.RLock | None" = None

    def __enter__(self) -> Any:
        if not self.db.in_transaction():
            self.queue = _QUEUE
            self.queue.acquire()
        try:
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
        if self.queue is not None:
            self.queue.release()
            self.queue = None
