"""Database statements observed: their duration (a histogram), the slow ones
logged by shape, and a child span each when tracing is on. The database's
``execute_sql`` is wrapped once at startup, and only when one of these is
asked for; every query of Peewee goes through it.

The time is the driver's ``execute``: for SQLite that runs the statement to
its first row, the rest is read while the rows are fetched.
"""
import logging
import time

log = logging.getLogger("restsvc.db")
SHAPE_MAX = 2000         # characters of a slow statement's text that are logged


def observe(database, histogram=None, slow_seconds=0.0, tracing=None):
    if histogram is None and not slow_seconds and tracing is None:
        return
    execute = database.execute_sql
    clock = time.perf_counter

    def execute_sql(sql, params=None, *args, **kwargs):
        started = clock()
        try:
            return execute(sql, params, *args, **kwargs)
        finally:
            seconds = clock() - started
            if histogram is not None:
                histogram.observe(seconds)
            if slow_seconds and seconds >= slow_seconds:
                # The statement's text has placeholders, never the values:
                # Peewee sends those apart, as ``params``.
                log.warning("slow statement (%.1f ms): %s", seconds * 1000, sql[:SHAPE_MAX])

    database.execute_sql = execute_sql
    if tracing is not None:
        tracing.wrap(database, "execute_sql", "db statement",
                     lambda sql, *rest: {"db.statement": sql[:SHAPE_MAX],
                                         "db.system": _system(database)})


def _system(database):
    return "sqlite" if "Sqlite" in type(database).__name__ else "postgresql"
