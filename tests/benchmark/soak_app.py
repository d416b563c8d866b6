"""The application the soak benchmark serves (``soak.py``): restsvc as
``restsvc.wsgi`` builds it, with ``svc.datasource.sqlite-wal-limit`` from
``$SOAK_WAL_LIMIT`` and the waits for SQLite's write lock recorded: the time
of each outermost write transaction's start (the process's queue for the
lock, then ``BEGIN IMMEDIATE``) and of each write statement run outside a
transaction (which takes the lock itself), written every 2 s to
``$SOAK_OUT/waits-<pid>.txt`` (milliseconds, one a line)."""
import os
import threading
import time
from dataclasses import replace

from restsvc import db
from restsvc.app import RestApp
from restsvc.settings import Settings, load_settings

try:
    from restsvc import writequeue
except ImportError:         # restsvc before issue 41 (a "before" run): BEGIN IMMEDIATE timed
    writequeue = None

WAITS = []
_run = db._Sqlite._run
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC")


def enter(self):
    """The outermost write transaction's start: the wait in the process's
    queue (writequeue.py) and for SQLite's lock together."""
    if self.db.in_transaction():
        return _enter(self)
    started = time.perf_counter()
    try:
        return _enter(self)
    finally:
        WAITS.append((time.perf_counter() - started) * 1000)


def run(self, sql, params, *more):
    if sql[:6].upper() not in _WRITES or self.in_transaction():
        return _run(self, sql, params, *more)
    started = time.perf_counter()
    try:
        return _run(self, sql, params, *more)
    finally:
        WAITS.append((time.perf_counter() - started) * 1000)


def _flush():
    path = os.path.join(os.environ["SOAK_OUT"], f"waits-{os.getpid()}.txt")
    while True:
        time.sleep(2)
        with open(path, "w") as out:
            out.write("\n".join(f"{wait:.3f}" for wait in list(WAITS)))


def begin(self, lock_type=None):
    started = time.perf_counter()
    try:
        return _begin(self, lock_type)
    finally:
        if lock_type == "IMMEDIATE":
            WAITS.append((time.perf_counter() - started) * 1000)


if writequeue is not None:
    _enter = writequeue.Queued.__enter__
    writequeue.Queued.__enter__ = enter
else:
    _begin = db._Sqlite.begin
    db._Sqlite.begin = begin
db._Sqlite._run = run
settings = load_settings()
if "sqlite_wal_limit" in Settings.__dataclass_fields__:
    settings = replace(settings, sqlite_wal_limit=int(os.environ["SOAK_WAL_LIMIT"]))
app = RestApp(settings)
_started = []


def application(environ, start_response):
    if not _started:            # in the worker (after the fork)
        _started.append(threading.Thread(target=_flush, daemon=True))
        _started[0].start()
    return app(environ, start_response)
