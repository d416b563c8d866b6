"""The entity log: who changed what, and what it was before.

An entity declared with ``history=True`` (or a list of attribute names) gets
one ``HistoryItem`` per create, update, delete and restore, written by the write path
(data/write/writer.py) in the write's own transaction: a write that rolls back
leaves no item. Values are kept in their JSON form: references by id,
collections (compositions, many-to-many) by their members' ids; audit fields
and the version are not recorded (the item's own ``username`` and
``changedDate`` say who and when).

Reading goes through the Entities API like any entity, with two rules of its
own (``row_rule`` and ``present_rows``, asked by data/read/query.py and
data/read/loader.py): an item is visible only when the caller may read its entity
and, under row-level roles, the entity's row is one the caller sees now; and
inside ``changes`` an attribute the caller may not view (or a reference to an
entity it may not read) appears by name only, without ``oldValue`` and
``newValue``.
"""
import datetime
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import peewee

from ...db import delete_in_batches, instant_param, is_sqlite
from ...jsonio import JsonObject, JsonValue, RawJson, dumps, loads, quoted
from ...model.entity import AUDIT_FIELDS, Entity, entity
from ...model.fields import DateTimeField
from ..access import Access, utc_now
from ..columns import among
from ..memo import entity_facts
from ..read.filters import attribute_visible
from ..read.query import EntityQuery, Expression
from .sqlwrite import Statement, insert_rows

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty
    from ...security.roles import Permissions
    from ..read.rows import RawRows
    from .operation import Operation

KINDS = ("CREATE", "UPDATE", "DELETE", "RESTORE")
HISTORY_ITEM = "HistoryItem"
_NOT_RECORDED = frozenset(("id", "version") + AUDIT_FIELDS)

# A recorded attribute: (JSON name, peewee field, property).
Recorded = tuple[str, peewee.Field, "MetaProperty"]
# What history compares a save with (``Writer.history_before``): the row's
# recorded values (peewee field name -> value) and its collections' member ids.
Before = tuple[dict[str, object], dict[str, set[str | int]]]


class HistoryEntry(NamedTuple):
    """One item to record: of which entity and row, what kind, what changed."""
    meta: "MetaClass"
    entity_id: str | int
    kind: str                   # one of KINDS
    changes: list[JsonObject] | RawJson     # [{name, oldValue, newValue}], or its JSON text


class JsonField(peewee.TextField):
    """A JSON value stored as text; Python code sees the value."""
    datatype = "json"
    converts_values = True      # loaded rows hold the value, not its text (data/columns.py)

    def db_value(self, value: JsonValue) -> str | None:
        return None if value is None else dumps(value)

    def python_value(self, value: JsonValue) -> JsonValue:
        if value is None or not isinstance(value, str):
            return value
        return loads(value)


@entity(name=HISTORY_ITEM, instance_name=("entityName", "entityId", "kind"),
        read_only=("entityName", "entityId", "kind", "username", "changedDate", "changes"))
class HistoryItem(Entity):
    entityName = peewee.CharField(max_length=255)
    entityId = peewee.CharField(max_length=255)
    # Indexed for one entity's history (entity, id, when) and by when (lists,
    # retention): every index is written with each item, under the write's
    # lock. Who and kind are filtered among those rows (a scan without them).
    kind = peewee.CharField(max_length=16)
    username = peewee.CharField(max_length=255)
    changedDate = DateTimeField(index=True)
    changes = JsonField(null=True)

    # Written only by the write path: no client creates, changes or deletes one.
    is_read_only_entity = True
    # No trigram index on entityName (schema/trigram.py): every item would
    # write its own substring-search rows. An application that wants
    # ``contains`` on it indexed sets ``HistoryItem.substring_search = True``
    # before its app is made (then ``restsvc migrate`` creates the index).
    substring_search = False

    class Meta:
        indexes = ((("entityName", "entityId", "changedDate"), False),)

    @classmethod
    def row_rule(cls, query: EntityQuery) -> Expression:
        return visible_history(query)

    @classmethod
    def present_rows(cls, rows: "RawRows", access: Access) -> None:
        hide_unreadable(rows, access)


# -- recording ---------------------------------------------------------------
def recorded(meta: "MetaClass") -> list[Recorded]:
    """(JSON name, peewee field, property) of each recorded scalar or
    reference attribute (embedded values by ``address.city``), worked out once."""
    facts = entity_facts(meta)
    cached: list[Recorded] | None = facts.recorded
    if cached is None:
        chosen = meta.history or None
        cached = []
        for name, prop in meta.properties.items():
            if name in _NOT_RECORDED or (chosen and name not in chosen) or not prop.persistent:
                continue
            if prop.is_embedded:
                cached += [(f"{name}.{part_name}", part.field, part)
                           for part_name, part in prop.related.properties.items()
                           if part.field is not None]
            elif prop.field is not None and not prop.is_collection:
                cached.append((name, prop.field, prop))
        facts.recorded = cached
    return cached


def recorded_collections(meta: "MetaClass", props: Iterable["MetaProperty"]
                         ) -> list["MetaProperty"]:
    chosen = meta.history or None
    return [prop for prop in props if not chosen or prop.name in chosen]


def json_value(prop: "MetaProperty", value: object) -> JsonValue:
    """A stored value in its JSON form, as the entity's own answers write it
    (``prop.json_value``: a decimal at its column's scale, a ``dateTime`` to
    the millisecond): references by id, enums by name."""
    if value is None:
        return None
    if prop.is_reference:
        return prop.related.row_id(getattr(value, "id", value))
    if prop.meta_enum is not None:
        return value.name if hasattr(value, "name") else value
    convert = prop.json_value
    assert convert is not None, prop.name     # a datatype's, as every recorded value has
    return convert(value)


def changes_of(meta: "MetaClass", values: dict[str, object], before: dict[str, object] | None
               ) -> list[str]:
    """The JSON text of each change ``{"name", "oldValue", "newValue"}`` of
    the recorded attributes ``values`` sets (peewee field name -> value),
    against ``before`` (None: creating): written straight to text, as
    ``dumps`` writes the object (a bulk's items cost no dict and no encoder
    call per change)."""
    changes: list[str] = []
    if before is None:      # a create: every old value is null
        for head, key, convert in _recorded_json(meta):
            value = values.get(key)
            if value is not None and (new := convert(value)) is not None:
                changes.append(f"{head}null,\"newValue\":{_json_text(new)}}}")
        return changes
    for head, key, convert in _recorded_json(meta):
        if key not in values:
            continue
        new = values[key]
        old = before.get(key)
        new, old = None if new is None else convert(new), None if old is None else convert(old)
        if old != new:
            changes.append(f"{head}{_json_text(old)},\"newValue\":{_json_text(new)}}}")
    return changes


def _json_text(value: JsonValue) -> str:
    """``dumps(value)``, a string's and None's without the encoder's call."""
    if value is None:
        return "null"
    return quoted(value) if value.__class__ is str else dumps(value)


def _recorded_json(meta: "MetaClass") -> list[tuple[str, str, "Callable[[object], JsonValue]"]]:
    """(a change's text up to its old value, field name, ``json_value`` of
    a value that is not None) of each ``recorded`` attribute, worked out once."""
    facts = entity_facts(meta)
    cached: list[tuple[str, str, Callable[[object], JsonValue]]] | None = facts.recorded_json
    if cached is None:
        cached = facts.recorded_json = [
            (f'{{"name":{quoted(name)},"oldValue":', field.name,
             prop.json_value if not prop.is_reference and prop.meta_enum is None
             and prop.json_value is not None else partial(json_value, prop))
            for name, field, prop in recorded(meta)]
    return cached


def collection_change(name: str, old_ids: Iterable[str | int],
                      new_ids: Iterable[str | int | None]) -> JsonObject | None:
    old, new = sorted(map(str, old_ids)), sorted(map(str, new_ids))
    if old == new:
        return None
    return {"name": name, "oldValue": old, "newValue": new}


def item_of_save(operation: "Operation", before: Before | None,
                 owner_field: peewee.ForeignKeyField | None = None,
                 owner_id: str | int | None = None) -> HistoryEntry | None:
    """The item of a save (``writer.py``: meta, id, kind, changes), or None;
    ``before``: ``Writer.history_before``'s values and member ids."""
    meta = operation.meta
    if meta.history is None:
        return None
    values, old_collections = before if before is not None else (None, {})
    written = operation.values
    if owner_field is not None and operation.creating:     # a new child names its owner
        written = {**written, owner_field.name: owner_id}
    changes = changes_of(meta, written, values)
    if operation.children or operation.members:
        changes += map(dumps, _collection_changes(operation, old_collections))
    if changes or operation.creating:
        assert operation.id is not None     # written by now: the database's id known too
        return HistoryEntry(meta, operation.id, "CREATE" if operation.creating else "UPDATE",
                            RawJson(f"[{','.join(changes)}]"))
    return None


def _collection_changes(operation: "Operation", old_collections: dict[str, set[str | int]]
                        ) -> list[JsonObject]:
    """The changes of a save's recorded compositions and many-to-many attributes."""
    props = [prop for prop, _ in operation.children] + [prop for prop, _ in operation.members]
    new_ids: dict[str, Sequence[str | int | None]] = dict(
        (prop.name, [child.id for child in children]) for prop, children in operation.children)
    new_ids.update((prop.name, ids) for prop, ids in operation.members)
    changes = [collection_change(prop.name, old_collections.get(prop.name, ()), new_ids[prop.name])
               for prop in recorded_collections(operation.meta, props)]
    return [change for change in changes if change is not None]


def record(access: Access, items: Sequence[HistoryEntry],
           batch: list[Statement] | None = None, now: datetime.datetime | None = None) -> None:
    """Insert items ``(meta, entity id, kind, changes)`` at ``now`` (by
    default the present): as few multi-row statements as
    ``sqlwrite.many_rows`` allows (one item's: added to ``batch``,
    statements the writer sends together, when given)."""
    if not items:
        return
    sql, rows = _insert_rows(access, items, now or utc_now())
    if len(rows) == 1 and batch is not None:
        batch.append((sql, rows[0]))
        return
    insert_rows(access, sql, rows)


_COLUMNS = ("id", "version", "entityName", "entityId", "kind", "username", "changedDate", "changes")


def _insert_rows(access: Access, items: Sequence[HistoryEntry], now: datetime.datetime
                 ) -> tuple[str, list[list[object]]]:
    """The one-row INSERT of an item and each item's parameters. Every item
    has the same columns: the text is built once (it runs under the write
    lock), and each column's conversion is looked up once per call."""
    fields = HistoryItem._meta.fields
    to_id, to_changes = fields["id"].db_value, fields["changes"].db_value
    who, when = access.username, instant_param(access.database)(fields["changedDate"].db_value(now))
    ids = [HistoryItem.id.default() for _ in items]
    rows: list[list[object]] = [
        [to_id(key), 1, item.meta.name, str(item.entity_id), item.kind, who, when,
         to_changes(item.changes)] for key, item in zip(ids, items)]
    # The parameters above are in _COLUMNS' order: the statement's, which
    # lists a model's fields in their declared order.
    return access.sql(("history-insert",), lambda: HistoryItem.insert(
        **dict.fromkeys(_COLUMNS, "")).returning()), rows    # no RETURNING: nothing reads it


def deleted_items(meta: "MetaClass", ids: Iterable[str | int]) -> list[HistoryEntry]:
    """DELETE items of rows about to go, with their last recorded values."""
    fields = [field for _, field, _ in recorded(meta)]
    model = meta.model
    rows: Iterable[dict[str, object]] = model.select(model.id, *fields).where(
        among(model.id, list(ids))).dicts().execute()
    items = []
    for row in rows:
        changes = [{"name": name, "oldValue": json_value(prop, row.get(field.name)),
                    "newValue": None}
                   for name, field, prop in recorded(meta) if row.get(field.name) is not None]
        items.append(HistoryEntry(meta, meta.row_id(row["id"]), "DELETE", changes))
    return items


# -- reading -----------------------------------------------------------------
def visible_history(query: EntityQuery) -> Expression:
    """Items of entities the caller may read; under row-level roles only
    those of rows the caller sees now (a deleted row's items then too are gone
    from view, as the row is)."""
    access = query.access
    permissions = access.permissions
    model = HistoryItem
    readable = [meta for meta in access.metadata.entities.values()
                if meta.history is not None and permissions.can(meta.name, "read")]
    if not readable:
        return model.entityName.is_null()       # never true: the column is NOT NULL
    condition = model.entityName.in_([meta.name for meta in readable])
    for meta in readable:
        visible = query.visible_ids(meta)
        if visible is not None:
            ids = visible.select(id_text(access.database, meta))
            condition &= (model.entityName != meta.name) | model.entityId.in_(ids)
    return condition


def id_text(database: peewee.Database, meta: "MetaClass") -> Expression:
    """The id column as ``entityId`` holds it (canonical text)."""
    column = meta.model.id
    if meta.id_kind != "uuid":
        return peewee.Cast(column, "VARCHAR(255)") if meta.id_kind == "integer" else column
    if not is_sqlite(database):
        return peewee.Cast(column, "text")
    # SQLite keeps a UUID as its 32 hex digits.
    parts = [peewee.fn.substr(column, start, length)
             for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))]
    text: peewee.ColumnBase = parts[0]
    for part in parts[1:]:
        text = text.concat("-").concat(part)
    return text


def hide_unreadable(rows: "RawRows", access: Access) -> None:
    """Values of attributes the caller may not view leave ``changes``: the
    rule filters, sorts and answers follow (``filters.attribute_visible``)."""
    names = rows.names
    if "changes" not in names:
        return
    at = names.index("changes")
    entity_at = names.index("entityName") if "entityName" in names else None
    permissions, parse = access.permissions, HistoryItem.changes.python_value
    for index, values in enumerate(rows):
        changes = parse(values[at])
        if not isinstance(changes, list) or not changes:
            continue
        name = None if entity_at is None else values[entity_at]
        meta = access.metadata.entity(name) if name else None
        shown = [change if meta is not None and _shows(meta, change["name"], permissions)
                 else {"name": change["name"]} for change in changes]
        # The value itself: the column's converter takes a value as it is.
        rows[index] = (*values[:at], shown, *values[at + 1:])


def _shows(meta: "MetaClass", name: str, permissions: "Permissions") -> bool:
    base, _, part = name.partition(".")        # address.city: its own level
    if not attribute_visible(permissions, meta, base):
        return False
    if not part:
        return True
    prop = meta.properties[base]
    return prop.is_embedded and attribute_visible(permissions, prop.related, part, (meta.name, base))


# -- retention ---------------------------------------------------------------
def prune(database: peewee.Database, retention_seconds: float, batch: int = 1000) -> int:
    """Remove items older than the retention, ``batch`` rows per short
    transaction (writers wait for one batch at most); the number removed."""
    if not retention_seconds:
        return 0
    cutoff = utc_now() - datetime.timedelta(seconds=retention_seconds)
    removed: int = delete_in_batches(database, HistoryItem, HistoryItem.id,
                                     HistoryItem.changedDate < cutoff, batch)
    return removed
