"""The outbox row a write leaves: one change event per create, update and
delete of an entity declared with ``events=True`` (step ``events`` of
writer.py), written in the change's transaction: a rolled-back write leaves
none, a committed one always has one.

An event's row comes from the changed row as it is now stored: an ``INSERT
... SELECT`` from that row, so the event's ``version`` and ``entityId`` are the
row's own, without a round trip to read them (a lone write's statement is
added to the writer's batch). A create's event is the exception, still made
from the values just written (``record_created``): the ``INSERT ... SELECT``
costs a create about 52k more instructions (1.594M against 1.542M per
request, tests/benchmark/instructions.py), above the benchmark's bound.

The events package (restsvc/events/) reads what is written here: it gives the
rows their commit-ordered ids, serves them as a feed and delivers them to
webhooks, and prunes them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import peewee

from ...db import database_proxy, execute
from ...jsonio import dumps
from ...model.entity import AUDIT_FIELDS, DELETION_FIELDS
from ...model.fields import DateTimeField
from ..access import utc_now
from ..memo import entity_facts
from .history import id_text
from .sqlwrite import Statement

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ..access import Access

KINDS = ("CREATE", "UPDATE", "DELETE")
TABLE = "restsvc_event"
NOT_LISTED = frozenset(("id", "version") + AUDIT_FIELDS + DELETION_FIELDS)
# (SQL, parameters) of a statement the writer sends with the others of a lone write.
Batch = list[Statement]     # a lone write's statements, sent as one (writer.py)


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

    class Meta:
        database = database_proxy
        table_name = TABLE


def changed_names(meta: MetaClass, operation: Any) -> list[str]:
    """The attributes a save wrote, by their JSON names (embedded values by the
    embedded attribute; the id, version, audit and deletion fields left out)."""
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


def record(access: Access, meta: MetaClass, ids: Sequence[Any], kind: str,
           changed: list[str], batch: Batch | None = None) -> None:
    """Insert the events of rows ``ids`` of ``meta`` (one statement, from the
    rows as now stored). One row's statement is added to ``batch`` when given
    (the writer sends those together); its SQL text is built once per entity."""
    values: dict[str, Any] = {
        "entity": meta.name, "kind": kind, "changed": dumps(changed),
        "username": access.username, "time": _stored_time()}
    if len(ids) != 1:
        slots = {name: peewee.Value(value) for name, value in values.items()}
        _statement(access.database, meta, slots, meta.model.id.in_(list(ids))).execute()
        return
    values["key"] = meta.model.id.db_value(ids[0])  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    key = ("event-insert", meta.name)
    cached: tuple[str, list[Any]] | None = access.sql_cache.get(key)
    if cached is None:
        slots = {name: peewee.Value(f"\0{name}") for name in values}
        sql, built = _statement(access.database, meta, slots,
                                meta.model.id == slots["key"]).sql()
        # Each parameter: the name of its slot, or (a constant of the statement,).
        template = [param[1:] if isinstance(param, str) and param[:1] == "\0" else (param,)
                    for param in built]
        access.sql_cache[key] = cached = (sql, template)
    sql, template = cached
    params = [values[slot] if isinstance(slot, str) else slot[0] for slot in template]
    if batch is not None:
        batch.append((sql, params))
    else:
        execute(access.database, sql, params)


def record_created(access: Access, meta: MetaClass, entity_id: Any, version: int | None,
                   changed: list[str], batch: Batch | None) -> None:
    """A create's event from the values just written (no read of the row),
    added to ``batch`` when given (the writer sends it with the INSERT as one
    statement), else run."""
    sql: str | None = access.sql_cache.get("event-values")
    if sql is None:
        sql = access.sql_cache["event-values"] = ChangeEvent.insert(
            entity="", entityId="", kind="", changed="", version=0, username="",
            time=utc_now()).sql()[0]
    params = [meta.name, str(entity_id), "CREATE", dumps(changed), version, access.username,
              _stored_time()]
    if batch is None:
        execute(access.database, sql, params)
    else:
        batch.append((sql, params))


def _statement(database: peewee.Database, meta: MetaClass, slots: dict[str, Any],
               condition: Any) -> Any:
    model = meta.model
    version = model.version if "version" in model._meta.fields else peewee.SQL("NULL")
    query = model.select(slots["entity"], id_text(database, meta), slots["kind"],
                         slots["changed"], version, slots["username"], slots["time"])
    return ChangeEvent.insert_from(query.where(condition), [
        ChangeEvent.entity, ChangeEvent.entityId, ChangeEvent.kind, ChangeEvent.changed,
        ChangeEvent.version, ChangeEvent.username, ChangeEvent.time])


def _stored_time() -> object:
    """Now, as the ``time`` column stores it."""
    stored: object = ChangeEvent.time.db_value(utc_now())  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    return stored
