"""The outbox: one event row per change, written in the change's transaction.

The write path (data/write/writer.py, step ``events``) inserts a row for every
create, update and delete of an entity declared with ``events=True``: a
rolled-back write leaves none, a committed one always has one. The row is an
``INSERT ... SELECT`` from the written row itself, so the event's ``version``
is the one the row now has, without a round trip to read it.

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
import datetime

import peewee

from ..db import database_proxy, delete_in_batches, is_sqlite, write_transaction
from ..jsonio import dumps, loads
from ..model.datatypes import format_utc_instant
from ..model.entity import AUDIT_FIELDS, DELETION_FIELDS
from ..model.fields import DateTimeField

KINDS = ("CREATE", "UPDATE", "DELETE")
TABLE = "restsvc_event"
_SEQUENCER_LOCK = 7301985       # advisory-lock key (db.py's set-up lock is 7301984)
NOT_LISTED = frozenset(("id", "version") + AUDIT_FIELDS + DELETION_FIELDS)


class ChangeEvent(peewee.Model):
    seq = peewee.BigAutoField()                         # insertion order, not the feed's
    id = peewee.BigIntegerField(null=True, unique=True)  # the feed's position (``assign``)
    entity = peewee.CharField(max_length=255)
    entityId = peewee.CharField(max_length=255)
    kind = peewee.CharField(max_length=16)
    changed = peewee.TextField(null=True)               # JSON list of attribute names
    version = peewee.IntegerField(null=True)
    username = peewee.CharField(max_length=255)
    time = DateTimeField(index=True)

    class Meta:
        database = database_proxy
        table_name = TABLE


# -- writing (steps of data/write/writer.py) ----------------------------------------
def changed_names(meta, operation):
    """The attributes a save wrote, by their JSON names (embedded values by the
    embedded attribute; the id, version, audit and deletion fields left out)."""
    names = _field_names(meta)
    changed = dict.fromkeys(names[field] for field in operation.values if field in names)
    changed.update(dict.fromkeys(prop.name for prop, _ in operation.children))
    changed.update(dict.fromkeys(prop.name for prop, _ in operation.members))
    return list(changed)


def _field_names(meta):
    cached = meta.__dict__.get("_event_names")
    if cached is None:
        cached = {}
        for name, prop in meta.properties.items():
            if name in NOT_LISTED or not prop.persistent:
                continue
            if prop.is_embedded:
                cached.update((part.field.name, name) for part in prop.target.properties.values()
                              if part.field is not None)
            elif prop.field is not None and not prop.is_collection:
                cached[prop.field.name] = name
        meta._event_names = cached
    return cached


def record(access, meta, ids, kind, changed, batch=None):
    """Insert the events of rows ``ids`` of ``meta`` (one statement, from the
    rows as now stored). One row's statement is added to ``batch`` when given
    (the writer sends those together); its SQL text is built once per entity."""
    from ..data.access import utc_now
    values = {"entity": meta.name, "kind": kind, "changed": dumps(changed),
              "username": access.username, "time": ChangeEvent.time.db_value(utc_now())}
    if len(ids) != 1:
        slots = {name: peewee.Value(value) for name, value in values.items()}
        _statement(access.database, meta, slots, meta.model.id.in_(list(ids))).execute()
        return
    values["key"] = meta.model.id.db_value(ids[0])
    key = ("event-insert", meta.name)
    cached = access.sql_cache.get(key)
    if cached is None:
        slots = {name: peewee.Value(f"\0{name}") for name in values}
        sql, built = _statement(access.database, meta, slots,
                                meta.model.id == slots["key"]).sql()
        template = [param[1:] if isinstance(param, str) and param[:1] == "\0" else (param,)
                    for param in built]
        access.sql_cache[key] = cached = (sql, template)
    sql, template = cached
    params = [values[slot] if isinstance(slot, str) else slot[0] for slot in template]
    if batch is not None:
        batch.append((sql, params))
    else:
        access.database.execute_sql(sql, params)


def record_created(access, meta, entity_id, version, changed, batch):
    """A create's event from the values just written (no read of the row),
    added to ``batch`` when given (the writer sends it with the INSERT as one
    statement), else run."""
    from ..data.access import utc_now
    sql = access.sql_cache.get("event-values")
    if sql is None:
        sql = access.sql_cache["event-values"] = ChangeEvent.insert(
            entity="", entityId="", kind="", changed="", version=0, username="",
            time=utc_now()).sql()[0]
    params = [meta.name, str(entity_id), "CREATE", dumps(changed), version, access.username,
              ChangeEvent.time.db_value(utc_now())]
    if batch is None:
        access.database.execute_sql(sql, params)
    else:
        batch.append((sql, params))


def _statement(database, meta, slots, condition):
    from ..data.write.history import id_text
    model = meta.model
    version = model.version if "version" in model._meta.fields else peewee.SQL("NULL")
    query = model.select(slots["entity"], id_text(database, meta), slots["kind"],
                         slots["changed"], version, slots["username"], slots["time"])
    return ChangeEvent.insert_from(query.where(condition), [
        ChangeEvent.entity, ChangeEvent.entityId, ChangeEvent.kind, ChangeEvent.changed,
        ChangeEvent.version, ChangeEvent.username, ChangeEvent.time])


# -- the sequencer -------------------------------------------------------------
_ASSIGN = (
    f'UPDATE {TABLE} SET id = n.base + n.rn FROM ('
    f'SELECT seq AS s, ROW_NUMBER() OVER (ORDER BY seq) AS rn, '
    f'(SELECT COALESCE(MAX(id), 0) FROM {TABLE}) AS base '
    f'FROM {TABLE} WHERE id IS NULL ORDER BY seq LIMIT {{limit}}) AS n '
    f'WHERE {TABLE}.seq = n.s')
_PENDING = f"SELECT 1 FROM {TABLE} WHERE id IS NULL LIMIT 1"


def assign(database, limit=10_000):
    """Give committed events without an id theirs; how many got one (0 also
    when another sequencer is at work: it assigns them)."""
    if database.execute_sql(_PENDING).fetchone() is None:
        return 0
    if is_sqlite(database):
        with write_transaction(database):
            return database.execute_sql(_ASSIGN.format(limit=int(limit))).rowcount
    with database.atomic():
        locked = database.execute_sql("SELECT pg_try_advisory_xact_lock(%s)",
                                      (_SEQUENCER_LOCK,)).fetchone()[0]
        if not locked:
            return 0
        return database.execute_sql(_ASSIGN.format(limit=int(limit))).rowcount


# -- reading -----------------------------------------------------------------
_COLUMNS = ("id", "entity", "entityId", "kind", "changed", "version", "username", "time")


def read(database, after, entities=None, limit=500):
    """Events after id ``after`` in id order, as dicts (``changed`` a list,
    ``time`` ISO 8601 UTC text), at most ``limit``; only of ``entities``
    unless it is None."""
    query = _selected().where(ChangeEvent.id > after).order_by(ChangeEvent.id).limit(limit)
    if entities is not None:            # an empty list: none
        query = query.where(ChangeEvent.entity.in_(list(entities)))
    return [as_event(row) for row in query.tuples()]


def read_ids(ids):
    """{id: event} of the events ``ids`` still kept (pruned ones are absent)."""
    rows = _selected().where(ChangeEvent.id.in_(list(ids))).tuples()
    return {event["id"]: event for event in map(as_event, rows)}


def _selected():
    return ChangeEvent.select(*(ChangeEvent._meta.fields[name] for name in _COLUMNS))


def as_event(row):
    event = dict(zip(_COLUMNS, row))
    event["changed"] = loads(event["changed"]) if event["changed"] else []
    when = event["time"]
    if isinstance(when, str):
        when = datetime.datetime.fromisoformat(when)
    event["time"] = format_utc_instant(when)
    return event


def bounds(database):
    """(smallest, largest) id kept, (None, None) before the first event."""
    row = database.execute_sql(
        f"SELECT MIN(id), MAX(id) FROM {TABLE} WHERE id IS NOT NULL").fetchone()
    return (row[0], row[1]) if row else (None, None)


def position(database):
    """The id a feed that starts now starts after."""
    assign(database)
    return bounds(database)[1] or 0


# -- retention ---------------------------------------------------------------
def prune(database, retention_seconds, batch=1000):
    """Remove events older than the retention, ``batch`` rows per short
    transaction; the newest event is always kept (ids continue after it).
    Returns the number removed."""
    from ..data.access import utc_now
    if not retention_seconds:
        return 0
    assign(database)
    newest = bounds(database)[1]
    if newest is None:
        return 0
    cutoff = utc_now() - datetime.timedelta(seconds=retention_seconds)
    return delete_in_batches(database, ChangeEvent, ChangeEvent.seq,
                             (ChangeEvent.time < cutoff) & (ChangeEvent.id < newest), batch)
