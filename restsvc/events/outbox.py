"""The outbox as the events package reads it: commit-ordered ids, reading, pruning.

The write path writes the rows (restsvc/data/write/outbox.py: one row per
create, update and delete of an entity declared with ``events=True``, in the
change's transaction); this module gives them their ids and reads them for
the feed, the delivery worker and ``restsvc events prune``.

Ids, and why they are assigned after commit
-------------------------------------------
A feed resumes after the last id a client saw, so an id may become readable
only when every smaller id is committed: otherwise a transaction that took
id 5 and commits after the one that took id 6 would be skipped by a reader
that has already moved past 6. Sequence values do not give that on
PostgreSQL (transactions commit in any order), and a counter row locked
until commit would make every writer of events wait for the others' commits.

So a writer inserts its row with ``seq`` (insertion order, from the table's
own sequence) and ``id`` empty; the *sequencer* (``assign``) later gives the
committed rows it can see ids ``max(id)+1, +2, ...`` in ``seq`` order, in one
short transaction. Sequencers run one at a time (PostgreSQL: a transaction
advisory lock, held until its commit; SQLite: the write lock), so:

    an id is readable only once every smaller id is committed; ids are
    dense (no gaps except those pruning makes) and never reused (pruning
    keeps the newest row).

Readers (the feed, the delivery worker, ``restsvc events prune``) run the
sequencer before they read; an event becomes readable at the next such
pass after its commit (the feed polls every ``POLL_SECONDS``).
"""
from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict, cast

import peewee

from ..data.access import utc_now
from ..data.write.outbox import KINDS, NOT_LISTED, TABLE, ChangeEvent
from ..db import delete_in_batches, execute, in_list, is_sqlite, list_param, write_transaction
from ..jsonio import loads
from ..model.datatypes import format_utc_instant

__all__ = ["KINDS", "NOT_LISTED", "TABLE", "ChangeEvent", "Event", "as_event", "assign",
           "bounds", "later", "position", "previous", "prune", "read", "read_ids"]
_SEQUENCER_LOCK = 7301985       # advisory-lock key (db.py's set-up lock is 7301984)


class Event(TypedDict):
    """A change event as readers get it (and the feed and webhooks send it)."""
    id: int
    entity: str
    entityId: str
    kind: str
    changed: list[str]
    version: int | None
    username: NotRequired[str]     # left out where the reader may not see the writer
    time: str
    match: NotRequired[bool]       # a filtered subscription's: false when the row left it


# -- the sequencer -------------------------------------------------------------
_ASSIGN = (
    f'UPDATE {TABLE} SET id = n.base + n.rn FROM ('
    f'SELECT seq AS s, ROW_NUMBER() OVER (ORDER BY seq) AS rn, '
    f'(SELECT COALESCE(MAX(id), 0) FROM {TABLE}) AS base '
    f'FROM {TABLE} WHERE id IS NULL ORDER BY seq LIMIT {{limit}}) AS n '
    f'WHERE {TABLE}.seq = n.s')
_PENDING = f"SELECT 1 FROM {TABLE} WHERE id IS NULL LIMIT 1"


def assign(database: peewee.Database, limit: int = 10_000, wait: bool = False) -> int:
    """Give committed events without an id theirs; how many got one (0 also
    when another sequencer is at work: it assigns them, unless ``wait``:
    then this one waits for it to commit and assigns what is left)."""
    if execute(database, _PENDING).fetchone() is None:
        return 0
    if is_sqlite(database):
        with write_transaction(database):
            return int(execute(database, _ASSIGN.format(limit=int(limit))).rowcount)
    with database.atomic():
        if wait:
            execute(database, "SELECT pg_advisory_xact_lock(%s)", (_SEQUENCER_LOCK,))
        else:
            row = execute(database, "SELECT pg_try_advisory_xact_lock(%s)",
                          (_SEQUENCER_LOCK,)).fetchone()
            if row is None or not row[0]:
                return 0
        return int(execute(database, _ASSIGN.format(limit=int(limit))).rowcount)


# -- reading -----------------------------------------------------------------
_COLUMNS = ("id", "entity", "entityId", "kind", "changed", "version", "username", "time")
_SELECTED = ", ".join(f'"{name}"' for name in _COLUMNS)


def read(database: peewee.Database, after: int, entities: Iterable[str] | None = None,
         limit: int = 500) -> list[Event]:
    """Events after id ``after`` in id order, as dicts (``changed`` a list,
    ``time`` ISO 8601 UTC text), at most ``limit``; only of ``entities``
    unless it is None. Written out, not built by peewee per call: every feed
    and delivery pass reads this way."""
    p = database.param
    names = [] if entities is None else list(entities)
    if entities is not None and not names:
        return []
    only = f" AND entity IN ({', '.join([p] * len(names))})" if names else ""
    sql = f"SELECT {_SELECTED} FROM {TABLE} WHERE id > {p}{only} ORDER BY id LIMIT {int(limit)}"
    return [as_event(row) for row in execute(database, sql, [after, *names]).fetchall()]


def previous(database: peewee.Database, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{id: the values before} of the events ``ids`` that keep them (an
    UPDATE's written attributes, a DELETE's every attribute: never sent, only
    judged by filters, matching.py). Written out, as ``read``: every filtered
    batch asks."""
    ids = list(ids)
    if not ids:
        return {}
    sql = (f"SELECT id, previous FROM {TABLE} WHERE id {in_list(database, 'bigint')} "
           f"AND previous IS NOT NULL")
    found = ((key, loads(text)) for key, text
             in execute(database, sql, [list_param(database, ids, "bigint")]).fetchall())
    return {key: values for key, values in found if isinstance(values, dict)}


def later(database: peewee.Database, entity: str, keys: Iterable[str], after: int
          ) -> list[tuple[str, str, dict[str, Any]]]:
    """(entityId, kind, the values before) of the committed events of rows
    ``keys`` of ``entity`` after id ``after`` (ids not assigned yet
    included), newest first: changes a row read now may already show."""
    keys = list(keys)
    p = database.param
    keys_in = f'"entityId" {in_list(database)}'
    sql = (f'SELECT "entityId", kind, previous FROM {TABLE} WHERE entity = {p} AND {keys_in} '
           f"AND (id > {p} OR id IS NULL) ORDER BY seq DESC")
    found = ((key, kind, loads(text) if text else {})
             for key, kind, text
             in execute(database, sql, [entity, list_param(database, keys), after]).fetchall())
    return [(key, kind, values) for key, kind, values in found if isinstance(values, dict)]


def read_ids(ids: Iterable[int]) -> dict[int, Event]:
    """{id: event} of the events ``ids`` still kept (pruned ones are absent)."""
    rows = _selected().where(ChangeEvent.id.in_(list(ids))).tuples()
    return {event["id"]: event for event in map(as_event, cast(Iterable[tuple[Any, ...]], rows))}


def _selected() -> peewee.ModelSelect[ChangeEvent]:
    return ChangeEvent.select(*(ChangeEvent._meta.fields[name] for name in _COLUMNS))


def as_event(row: tuple[Any, ...]) -> Event:
    """An event from its row (``_COLUMNS``' values)."""
    column = dict(zip(_COLUMNS, row))
    when = column["time"]
    if isinstance(when, str):
        when = datetime.datetime.fromisoformat(when)
    return {"id": column["id"], "entity": column["entity"], "entityId": column["entityId"],
            "kind": column["kind"], "changed": loads(column["changed"]) if column["changed"] else [],
            "version": column["version"], "username": column["username"],
            "time": format_utc_instant(when)}


def bounds(database: peewee.Database) -> tuple[int | None, int | None]:
    """(smallest, largest) id kept, (None, None) before the first event."""
    row = execute(database,
        f"SELECT MIN(id), MAX(id) FROM {TABLE} WHERE id IS NOT NULL").fetchone()
    return (row[0], row[1]) if row else (None, None)


def position(database: peewee.Database) -> int:
    """The id a feed that starts now starts after: every event committed
    before it is at or below it (should another sequencer be at work, this
    waits for its commit rather than answer the id before its events)."""
    assign(database, wait=True)
    newest = bounds(database)[1]
    return int(newest or 0)


# -- retention ---------------------------------------------------------------
def prune(database: peewee.Database, retention_seconds: float, batch: int = 1000) -> int:
    """Remove events older than the retention, ``batch`` rows per short
    transaction; the newest event is always kept (ids continue after it).
    Returns the number removed."""
    if not retention_seconds:
        return 0
    assign(database)
    newest = bounds(database)[1]
    if newest is None:
        return 0
    cutoff = utc_now() - datetime.timedelta(seconds=retention_seconds)
    return int(delete_in_batches(database, ChangeEvent, ChangeEvent.seq,
                                 (ChangeEvent.time < cutoff) & (ChangeEvent.id < newest), batch))
