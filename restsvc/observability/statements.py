"""Database statements observed: their duration (a histogram), the slow ones
logged by shape, and a child span each when tracing is on. The database's
``execute_sql`` (``statements.Statements``) times them when one of these
is asked for; every query of Peewee goes through it.

The time is the driver's ``execute``: for SQLite that runs the statement to
its first row, the rest is read while the rows are fetched.
"""
from typing import TYPE_CHECKING

import peewee

from ..statements import SHAPE_MAX, observe_statements

if TYPE_CHECKING:
    from .tracing import Tracing


def observe(database: peewee.Database, times: list[float] | None = None, slow_seconds: float = 0.0,
            tracing: "Tracing | None" = None) -> None:
    """``times``: a list each statement's seconds are appended to (the
    metrics add them up in batches); ``slow_seconds``: from how long a
    statement is logged. Per statement: two clock reads, one append, one
    comparison (in ``statements.Statements.execute_sql``)."""
    if times is None and not slow_seconds and tracing is None:
        return
    observe_statements(database, times.append if times is not None else None, slow_seconds)
    if tracing is not None:
        tracing.wrap(database, "execute_sql", "db statement",
                     lambda sql, *rest: {"db.statement": sql[:SHAPE_MAX],
                                         "db.system": _system(database)})


def _system(database: peewee.Database) -> str:
    return "sqlite" if "Sqlite" in type(database).__name__ else "postgresql"
