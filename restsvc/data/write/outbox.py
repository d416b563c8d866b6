"""The outbox row a write leaves: one change event per create, update and
delete of an entity declared with ``events=True`` (step ``events`` of
writer.py), written in the change's transaction: a rolled-back write leaves
none, a committed one always has one.

An event's row has one source: what the write left, as (id, version)
pairs (``Written``), written by ``record`` with ``INSERT ... VALUES``. A
create knows them (the values it inserted), an update reads them back from
its own statement (``RETURNING``), and a delete, marking or restore, which
reach rows by id at every depth of their compositions, reads them with
``written`` (a delete: before its statement; the others: after).

An UPDATE's and a DELETE's row also keeps ``previous``: the values before
the change (JSON, by attribute path as history names them, ``address.city``;
references by id, enums by name) of the attributes the update wrote, or of
every attribute of a deleted row. Filtered subscriptions judge the row
before by them (restsvc/events/matching.py); no reader ever sends them.
An update reads them with the values history compares with, before its
statement (``Writer.history_before``: one read by id, locked until commit;
a bulk's updates that stand alone: one read of all their rows,
``Pending.read_before``).

The events package (restsvc/events/) reads what is written here: it gives the
rows their commit-ordered ids, serves them as a feed and delivers them to
webhooks, and prunes them.
"""
from __future__ import annotations

import datetime
import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import peewee

from ...db import database_proxy, execute, id_chunks, instant_param, is_sqlite
from ...jsonio import dumps
from ...model.entity import AUDIT_FIELDS, DELETION_FIELDS
from ...model.fields import DateTimeField
from ..access import utc_now
from ..columns import among
from ..memo import Memo, Owned, entity_facts, owned
from .history import json_value
from .sqlwrite import Statement, insert_rows

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ..access import Access

KINDS = ("CREATE", "UPDATE", "DELETE")
TABLE = "restsvc_event"
NOT_LISTED = frozenset(("id", "version") + AUDIT_FIELDS + DELETION_FIELDS)
# (SQL, parameters) of a statement the writer sends with the others of a lone write.
Batch = list[Statement]     # a lone write's statements, sent as one (writer.py)
# A row as a write left it: (its id as loaded rows hold it, its version or
# None, its ``previous`` values as JSON text or None).
Written = tuple[Any, "int | None", "str | None"]
# PostgreSQL: the channel a write that leaves events notifies in its transaction
# (delivered at commit: it wakes the change feed's readers, events/listen.py).
CHANNEL = "restsvc_events"
NOTIFY: Statement = (f"NOTIFY {CHANNEL}", [])


class ChangeEvent(peewee.Model):
    seq = peewee.BigAutoField()                         # insertion order, not the feed's
    id = peewee.BigIntegerField(null=True, unique=True)  # the feed's position (events/outbox.py)
    entity = peewee.CharField(max_length=255)
    entityId = peewee.CharField(max_length=255)
    kind = peewee.CharField(max_length=16)
    changed = peewee.TextField(null=True)               # JSON list of attribute names
    version = peewee.IntegerField(null=True)
    username = peewee.CharField(max_length=255)
    time = DateTimeField(index=True)
    previous = peewee.TextField(null=True)              # JSON: values before (module doc)

    class Meta:
        database = database_proxy
        table_name = TABLE


def changed_names(meta: MetaClass, operation: Any) -> list[str]:
    """The attributes a save wrote, by their JSON names (embedded values by the
    embedded attribute; the id, version, audit and deletion fields left out)."""
    if not operation.children and not operation.members:     # a bulk's rows: mostly one set
        return owned(_CHANGED, meta, tuple(operation.values), lambda: _changed(meta, operation))
    return _changed(meta, operation)


_CHANGED: Memo[Owned[MetaClass, list[str]]] = Memo("outbox.changed", 1024)


def _changed(meta: MetaClass, operation: Any) -> list[str]:
    names = _field_names(meta)
    changed = dict.fromkeys(names[field] for field in operation.values if field in names)
    changed.update(dict.fromkeys(prop.name for prop, _ in operation.children))
    changed.update(dict.fromkeys(prop.name for prop, _ in operation.members))
    return list(changed)


def _field_names(meta: MetaClass) -> dict[str, str]:
    """Field name -> the attribute an event names for it, worked out once per entity."""
    facts = entity_facts(meta)
    cached = facts.event_names
    if cached is None:
        cached = {}
        for name, prop in meta.properties.items():
            if name in NOT_LISTED or not prop.persistent:
                continue
            if prop.is_embedded:
                cached.update((part.field.name, name) for part in prop.related.properties.values()
                              if part.field is not None)
            elif prop.field is not None and not prop.is_collection:
                cached[prop.field.name] = name
        facts.event_names = cached
    return cached


def held(meta: MetaClass) -> dict[str, tuple[str, Any]]:
    """Field name -> (attribute path, property) of each column that holds an
    attribute's value (embedded values' by ``address.city``; not the id and
    version), worked out once per entity."""
    facts = entity_facts(meta)
    cached: dict[str, tuple[str, Any]] | None = facts.held
    if cached is None:
        cached = {}
        for name, prop in meta.properties.items():
            if name in ("id", "version") or not prop.persistent:
                continue
            if prop.is_embedded:
                cached.update((part.field.name, (f"{name}.{part_name}", part))
                              for part_name, part in prop.related.properties.items()
                              if part.field is not None)
            elif prop.field is not None and not prop.is_collection:
                cached[prop.field.name] = (name, prop)
        facts.held = cached
    return cached


def fields_before(meta: MetaClass, written_fields: Iterable[str]) -> list[peewee.Field]:
    """The columns an update of ``meta`` that writes ``written_fields`` reads
    before its statement for its event's ``previous`` values."""
    columns = held(meta)
    return [meta.model._meta.fields[name] for name in written_fields if name in columns]


def previous_text(meta: MetaClass, values: dict[str, object]) -> str:
    """``previous`` of an event: ``values`` (field name -> stored value) by attribute path."""
    columns = held(meta)
    return dumps({columns[name][0]: json_value(columns[name][1], value)
                  for name, value in values.items() if name in columns})


def written(meta: MetaClass, ids: Sequence[Any], with_previous: bool = False) -> list[Written]:
    """(id, version, previous) of the stored rows ``ids`` of ``meta``;
    ``previous`` (every attribute's value) only ``with_previous``."""
    model = meta.model
    version = model.version if "version" in model._meta.fields else peewee.SQL("NULL")
    fields = [model._meta.fields[name] for name in held(meta)] if with_previous else []
    found: list[Written] = []
    for chunk in id_chunks(ids):
        rows = cast(Iterable[tuple[Any, ...]], model.select(model.id, version, *fields).where(
            among(model.id, chunk)).tuples())
        found += [(meta.row_id(row[0]), row[1], previous_text(meta, {
            field.name: value for field, value in zip(fields, row[2:])}) if fields else None)
            for row in rows]
    return found


def record(access: Access, meta: MetaClass, rows: Sequence[Written], kind: str,
           changed: list[str], batch: Batch | None = None,
           now: datetime.datetime | None = None) -> None:
    """Insert the events of ``rows`` (what the write left, ``Written``) at ``now``."""
    insert(access, event_rows(access, meta, rows, kind, changed, now), batch)


def event_rows(access: Access, meta: MetaClass, rows: Sequence[Written], kind: str,
               changed: list[str], now: datetime.datetime | None = None) -> list[list[object]]:
    """The parameters of the events of ``rows`` at ``now`` (by default the
    present), one list per row (``insert`` writes them; a bulk's writer
    collects them first, data/write/pending.py)."""
    common = (_names_text(tuple(changed)), access.username, _stored_time(access, now))
    return [[meta.name, str(key), kind, common[0], version, common[1], common[2], previous]
            for key, version, previous in rows]


def insert(access: Access, params: Sequence[list[object]], batch: Batch | None = None) -> None:
    """Insert events by their ``event_rows``: as few multi-row statements as
    ``sqlwrite.many_rows`` allows. A lone row's statement is added to
    ``batch`` when given (the writer sends those together). On PostgreSQL,
    with ``NOTIFY`` (``CHANNEL``): in the write's transaction, so sent at commit."""
    sql = access.sql(("event-values",), lambda: ChangeEvent.insert(
        entity="", entityId="", kind="", changed="", version=0, username="",
        time=utc_now(), previous="").returning())      # no RETURNING: nothing reads it
    notify = not is_sqlite(access.database)
    if batch is not None and len(params) == 1:
        batch.append((sql, params[0]))
        if notify:
            batch.append(NOTIFY)
        return
    insert_rows(access, sql, params)
    if notify:
        execute(access.database, NOTIFY[0])


@functools.lru_cache(maxsize=256)
def _names_text(changed: tuple[str, ...]) -> str:
    """``changed`` as the column stores it (a bulk's rows mostly name the same)."""
    return dumps(list(changed))


def _stored_time(access: Access, now: datetime.datetime | None = None) -> object:
    """``now`` (by default the present), as the ``time`` column stores it
    (``db.instant_param``: on SQLite its text, made once for a bulk's events,
    which share one instant, ``Writer.save_all``)."""
    stored: object = ChangeEvent.time.db_value(now or utc_now())  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    return instant_param(access.database)(stored)
