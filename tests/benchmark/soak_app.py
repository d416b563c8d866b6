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

from restsvc import db, writequeue
from restsvc.app import RestApp
from restsvc.settings import load_settings

WAITS = []
_enter, _run = writequeue.Queued.__enter__, db._Sqlite._run
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


def run(self, sql, params):
    if sql[:6].upper() not in _WRITES or self.in_transaction():
        return _run(self, sql, params)
    started = time.perf_counter()
    try:
        return _run(self, sql, params)
    finally:
        WAITS.append((time.perf_counter() - started) * 1000)


def _flush():
    path = os.path.join(os.environ["SOAK_OUT"], f"waits-{os.getpid()}.txt")
    while True:
        time.sleep(2)
        with open(path, "w") as out:
            out.write("\n".join(f"{wait:.3f}" for wait in list(WAITS)))


writequeue.Queued.__enter__, db._Sqlite._run = enter, run
app = RestApp(replace(load_settings(), sqlite_wal_limit=int(os.environ["SOAK_WAL_LIMIT"])))
_started = []


def application(environ, start_response):
    if not _started:            # in the worker (after the fork)
        _started.append(threading.Thread(target=_flush, daemon=True))
        _started[0].start()
    return app(environ, start_response)
