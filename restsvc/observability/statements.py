"""Database statements observed: their duration (a histogram), the slow ones
logged by shape, and a child span each when tracing is on. The database's
``execute_sql`` is wrapped once at startup, and only when one of these is
asked for; every query of Peewee goes through it.

The time is the driver's ``execute``: for SQLite that runs the statement to
its first row, the rest is read while the rows are fetched.
"""
import logging
import math
import time

log = logging.getLogger("restsvc.db")
SHAPE_MAX = 2000         # characters of a slow statement's text that are logged


def observe(database, times=None, slow_seconds=0.0, tracing=None):
    """``times``: a list each statement's seconds are appended to (the
    metrics add them up in batches); ``slow_seconds``: from how long a
    statement is logged. Per statement: two clock reads, one append, one
    comparison."""
    if times is None and not slow_seconds and tracing is None:
        return
    execute = database.execute_sql
    clock = time.perf_counter
    record = times.append if times is not None else _ignore
    slow = slow_seconds or math.inf

    def execute_sql(sql, params=None, *args, **kwargs):
        started = clock()
        try:
            return execute(sql, params, *args, **kwargs)
        finally:
            seconds = clock() - started
            record(seconds)
            if seconds >= slow:
                # The statement's text has placeholders, never the values:
                # Peewee sends those apart, as ``params``.
                log.warning("slow statement (%.1f ms): %s", seconds * 1000, sql[:SHAPE_MAX])

    database.execute_sql = execute_sql
    if tracing is not None:
        tracing.wrap(database, "execute_sql", "db statement",
                     lambda sql, *rest: {"db.statement": sql[:SHAPE_MAX],
                                         "db.system": _system(database)})


def _ignore(seconds):
    pass


def _system(database):
    return "sqlite" if "Sqlite" in type(database).__name__ else "postgresql"
