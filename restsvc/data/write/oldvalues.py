"""What an update reads before its statement: the row's values its history
item compares with (the recorded columns) and its event keeps as
``previous`` (the columns it writes), with its version (``Writer.history_before``)."""
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import peewee

from ...db import id_chunks
from ..columns import among
from ..access import Access
from .history import recorded

if TYPE_CHECKING:
    from ...model.metadata import MetaClass


def old_values(access: Access, meta: "MetaClass", entity_id: str | int,
               lock: bool = True, more: Sequence[peewee.Field] = ()) -> dict[str, object] | None:
    """The recorded columns (with history) and ``more`` of a row before its
    UPDATE, and its version when it has one (PostgreSQL, ``lock``: locked
    until commit, so concurrent writers record in order), or None."""
    model = meta.model
    fields = _read_before(meta, more)
    lock = lock and access.database.for_update
    key = ("history-old", meta.name, lock, tuple(field.name for field in fields))
    sql = access.sql_cache.get(key)
    params = [model.id.db_value(entity_id)]  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    if sql is None:
        query = model.select(*fields).where(model.id == entity_id)
        if lock:
            query = query.for_update()
        sql, built = query.sql()
        if list(built) == params:
            access.sql_cache[key] = sql
        params = built
    row = access.database.execute_sql(sql, params).fetchone()  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    if row is None:
        return None
    return {field.name: field.python_value(value)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
            for field, value in zip(fields, row)}


def old_values_of(access: Access, meta: "MetaClass", entity_ids: Sequence[str | int],
                  more: Sequence[peewee.Field] = ()) -> dict[str | int, dict[str, object]]:
    """``old_values`` of many rows (a bulk's updates), one statement per
    ``db.IDS_PER_STATEMENT`` ids, locked on PostgreSQL in id order: {id: values}
    of the rows found."""
    fields = _read_before(meta, more)
    names = [field.name for field in fields]
    return {meta.row_id(key): dict(zip(names, row))
            for key, *row in _in_id_order(access, meta, entity_ids, fields)}


def lock_rows(access: Access, meta: "MetaClass", entity_ids: Sequence[str | int]) -> None:
    """The rows ``entity_ids`` of ``meta`` locked until commit as
    ``old_values_of`` locks them (PostgreSQL; SQLite's write transaction
    holds them all already)."""
    if access.database.for_update:
        list(_in_id_order(access, meta, entity_ids, ()))


def _in_id_order(access: Access, meta: "MetaClass", entity_ids: Sequence[str | int],
                 fields: Sequence[peewee.Field]) -> Iterator[tuple[Any, ...]]:
    """(id, *fields) of the rows ``entity_ids``, read (and on PostgreSQL
    locked) in id order, one statement per ``db.IDS_PER_STATEMENT`` ids."""
    model: Any = meta.model     # a Peewee model: its fields are class attributes
    for chunk in id_chunks(sorted(entity_ids, key=_id_order)):
        query = model.select(model.id, *fields).where(among(model.id, chunk)).order_by(model.id)
        if access.database.for_update:
            query = query.for_update()
        yield from query.tuples()


def _id_order(key: str | int) -> tuple[int, str]:
    """Ids in the order the rows are locked: numbers as numbers (not "10"
    before "9"), texts (canonical uuid text sorts as the uuids) as texts."""
    return (key, "") if isinstance(key, int) else (0, key)


def _read_before(meta: "MetaClass", more: Sequence[peewee.Field]) -> list[peewee.Field]:
    """The columns ``old_values`` reads: the recorded ones, ``more``, the version."""
    fields = [field for _, field, _ in recorded(meta)] if meta.history is not None else []
    known = {field.name for field in fields}    # by name: a Field's ``==`` makes an expression
    fields += [field for field in more if field.name not in known]
    if "version" in meta.properties:
        fields.append(meta.model._meta.fields["version"])
    return fields
