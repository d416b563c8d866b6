"""SQLite's write-ahead log kept under ``svc.datasource.sqlite-wal-limit``.

SQLite copies the log back into the database at its automatic (passive)
checkpoints, but it starts the log over from its beginning only when no
reader still reads an older snapshot from it. Readers that never pause all
at once (change-feed subscribers polling, a steady flow of requests) keep
that from ever happening, and the file grows for as long as the load lasts
(sqlite.org/wal.html, "Avoiding Excessively Large WAL Files").

So each process that serves requests runs one ``WalBound`` thread: every
``INTERVAL`` seconds it looks at the log's size (one ``stat``), and when it is
past a quarter of the limit it runs ``PRAGMA wal_checkpoint(TRUNCATE)`` on a
connection of its own. That checkpoint waits (at most ``WAIT`` seconds, its
busy timeout) until the readers of the time have moved to the newest
snapshot, copies the log into the database and cuts the file to zero bytes;
new writers wait for it meanwhile, so the wait is kept short, and a
checkpoint that could not finish in time is tried again ``_AGAIN`` later.
SQLite lets one connection checkpoint at a time: of several processes'
threads, one does it, the others' attempts return at once. The connections
that serve requests (``wal_pragmas``) have ``journal_size_limit`` set to the
limit: when a writer starts the log over by itself, the file is cut back to
it; their own automatic (passive) checkpoint stays SQLite's (1,000 pages),
or a quarter of the limit when that is less: when nothing keeps the log
from starting over, it stays as small as it always was.

Started lazily by the first request a process ends (``ensure``), so the thread
belongs to the process that serves: a gunicorn worker forked after the
application was loaded starts its own.
"""
import logging
import os
import sqlite3
import threading
import time
import weakref

log = logging.getLogger("restsvc.db")

INTERVAL = 0.1          # seconds between two looks at the log's size
WAIT = 0.2              # seconds a checkpoint may wait for readers and the writer
_PAGE = 4096            # SQLite's default page size (bytes)
_AUTOCHECKPOINT = 1000  # SQLite's default automatic checkpoint (pages of log)
_AGAIN = 0.005          # seconds before a checkpoint that found the way taken is tried again


_BOUNDS: "weakref.WeakSet[WalBound]" = weakref.WeakSet()


def _forked() -> None:
    """In a forked child the parent's thread does not run: each bound starts its own."""
    for bound in list(_BOUNDS):
        bound.running = False


os.register_at_fork(after_in_child=_forked)


def wal_pragmas(limit: int) -> tuple[tuple[str, int], ...]:
    """The pragmas of the connections that serve requests (see the module docstring)."""
    return (("journal_size_limit", limit),
            ("wal_autocheckpoint", max(16, min(_AUTOCHECKPOINT, limit // 4 // _PAGE))))


class WalBound:
    def __init__(self, path: str, limit: int) -> None:
        self.path, self.limit = path, limit
        self.wal = f"{path}-wal"
        self.running = False         # whether this process's thread runs
        self.checkpoints = 0         # checkpoints that cut the file (this process)
        self.largest = 0             # largest log size seen (bytes, this process)
        _BOUNDS.add(self)

    def ensure(self) -> None:
        """The thread of this process, started at the first call; a request
        reads ``running`` first, so later calls cost nothing."""
        if not self.running:
            self.running = True
            threading.Thread(target=_run, args=(weakref.ref(self),), name="restsvc-wal-bound",
                             daemon=True).start()

    def look(self, connection: sqlite3.Connection) -> bool | None:
        """Checkpoint when the log is past a quarter of the limit (the rest is
        the slack for what is written until the checkpoint is through);
        whether the file was cut, None when it could not be yet."""
        try:
            size = os.stat(self.wal).st_size
        except OSError:
            return False        # no log (yet), or the database went away
        self.largest = max(self.largest, size)
        if size <= self.limit // 4:
            return False
        try:
            busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as exc:
            log.warning("WAL checkpoint failed: %s", exc)
            return False
        if busy:
            return None         # readers, a writer or another checkpoint: tried again
        self.checkpoints += 1
        return True


def _run(bound: "weakref.ref[WalBound]") -> None:
    """The thread: it ends when its database object is gone (tests open many)."""
    first = bound()
    if first is None:
        return
    connection = sqlite3.connect(first.path, timeout=WAIT, isolation_level=None,
                                 check_same_thread=False)
    del first
    try:
        pending = False
        while True:
            # A checkpoint that found readers, a writer or another checkpoint: again soon.
            time.sleep(_AGAIN if pending else INTERVAL)
            current = bound()
            if current is None:
                return
            pending = current.look(connection) is None
            del current
    finally:
        connection.close()
