"""What the model declares, in the shape ``inspect.py`` reads from a database,
and the SQL that creates it.

A table's definition is peewee's (columns, primary key, foreign keys), plus a
database-level DEFAULT for each NOT NULL column with a constant default: an
instance that does not know the column yet can still insert rows (expand and
contract, restsvc/docs/model.md "Changing the model"). The indexes are the declared ones and
the derived lower-case ones (``db.lowered_index_sql``) with their trigram
indexes for substring search (``trigram.py``), and the full-text index of
an entity declaring searchable attributes (``fulltext.py``). An owner of many-to-many
links has a column of their keys per attribute, kept by triggers on the link
table (``linkkeys.py``): the column is declared with the owner's table, the
triggers with the link table.
"""
import datetime
import decimal
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import peewee

from ..db import is_sqlite, lowered_index_sql
from . import fulltext, linkkeys, trigram
from .inspect import Column, DeclaredIndex, ForeignKey, Index, Table, normalize_type

KEYS_TYPE = "TEXT"      # the type of a link keys column (linkkeys.py)
# (model, field) of each indexed string attribute: its lower-cased index and
# its trigram index are declared too (Metadata.indexed_text_fields).
Lowered = Sequence[tuple[type[peewee.Model], peewee.Field]]
# The full-text index of each entity declaring searchable attributes (Metadata.full_text).
Searched = Sequence[fulltext.FullText]


@dataclass(frozen=True)
class DeclaredTable:
    table: Table            # columns, indexes (name -> Index with its CREATE sql), foreign keys
    model: type[peewee.Model]
    renames: dict[str, str]     # new column -> old column, declared with @entity(renames=...)
    internal: tuple[str, ...] = ()      # columns of no field: the link keys of the table's rows
    link_keys: tuple[linkkeys.LinkKeys, ...] = ()   # kept by triggers on this (link) table


def declared_schema(database: peewee.Database, models: Sequence[type[peewee.Model]],
                    lowered: Lowered = (), search: Searched = (),
                    ) -> dict[str, DeclaredTable]:
    """{table name: DeclaredTable} of the models, in the order given."""
    by_model: dict[type[peewee.Model], list[peewee.Field]] = {}
    for model, field in lowered:
        by_model.setdefault(model, []).append(field)
    support = trigram.support(database) if lowered else None
    internal, link_keys = linkkeys.declared(database, models,
                                            lambda field: datatype_sql(database, field))
    schema: dict[str, DeclaredTable] = {}
    for model in models:
        table = Table(model._meta.table_name)
        for field in model._meta.sorted_fields:
            table.columns[field.column_name] = Column(
                field.column_name, normalize_type(datatype_sql(database, field)), field.null,
                default_literal(database, field))
            if isinstance(field, peewee.ForeignKeyField):
                table.foreign_keys[field.column_name] = ForeignKey(
                    field.column_name, field.rel_model._meta.table_name, field.rel_field.column_name)
        for column in internal.get(table.name, ()):
            table.columns[column] = Column(column, normalize_type(KEYS_TYPE), True)
        for index in model._meta.fields_to_index():
            # peewee-stubs leave out Model._schema (a SchemaManager) and its _create_index.
            sql = render(database, model._schema._create_index(index, safe=False))  # type: ignore[attr-defined]
            table.indexes[index._name] = Index(index._name, bool(index._unique), sql)
        fields = by_model.get(model, [])
        for field in fields:
            name, sql = lowered_index_sql(database, model, field)
            table.indexes[name] = Index(name, False, sql)
        if fields and getattr(model, "substring_search", True):     # HistoryItem's: unless declared
            assert support is not None      # worked out when there are lowered fields
            for substring in (DeclaredIndex(*declared) for declared in
                              trigram.declared_indexes(database, model, fields, support)):
                table.indexes[substring.name] = Index(substring.name, False, substring.sql,
                                                      substring.create, substring.drop,
                                                      substring.covers)
        for index in search:
            if index.table == table.name:
                text = DeclaredIndex(*fulltext.declared_index(database, index))
                table.indexes[text.name] = Index(text.name, False, text.sql, text.create,
                                                 text.drop)
        schema[table.name] = DeclaredTable(table, model, _renamed_columns(model),
                                           tuple(internal.get(table.name, ())),
                                           tuple(link_keys.get(table.name, ())))
    return schema


def _renamed_columns(model: type[peewee.Model]) -> dict[str, str]:
    declared: dict[str, str] = getattr(model.__dict__.get("_entity"), "renames", None) or {}
    renames: dict[str, str] = {}
    for new, old in declared.items():
        field = model._meta.fields.get(new)
        if field is None:
            continue
        column: str = field.column_name
        renames[column] = old + column[len(new):] if column.startswith(new) else old
    return renames


def render(database: peewee.Database, node: peewee.Node | peewee.Context) -> str:
    """A peewee node (or a built context) -> SQL text, parameters written in as literals."""
    context: peewee.Context = node if isinstance(node, peewee.Context) \
        else _context(database).sql(node)  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    sql, params = context.query()
    if params:
        sql = sql.replace(database.param, "%s") % tuple(_literal(database, v) for v in params)
    return sql


def _context(database: peewee.Database) -> peewee.Context:
    return database.get_sql_context(scope=peewee.SCOPE_VALUES)    # as peewee's own DDL


def create_table_sql(database: peewee.Database, model: type[peewee.Model], name: str | None = None,
                     internal: Iterable[str] = ()) -> str:
    """``CREATE TABLE`` of the model (under ``name`` for a rebuild's new table),
    with the ``internal`` columns (``DeclaredTable.internal``) last."""
    context = _context(database)
    columns: list[peewee.Node] = []
    constraints: list[peewee.Node] = []
    for field in model._meta.sorted_fields:
        parts: list[peewee.Node] = [field.ddl(context)]
        default = default_literal(database, field)
        if default is not None:
            parts.append(peewee.SQL(f"DEFAULT {default}"))
        columns.append(peewee.NodeList(parts))
        if isinstance(field, peewee.ForeignKeyField) and not field.deferred:
            constraints.append(field.foreign_key_constraint())
    columns += [peewee.SQL(internal_column_sql(column)) for column in internal]
    meta = model._meta
    if meta.composite_key:
        constraints.insert(0, peewee.NodeList((peewee.SQL("PRIMARY KEY"), peewee.EnclosedNodeList(
            [meta.fields[name].column
             for name in cast(peewee.CompositeKey, meta.primary_key).field_names]))))
    constraints.extend(meta.constraints or ())
    table = peewee.Entity(name or meta.table_name)
    return render(database, peewee.NodeList((
        peewee.SQL("CREATE TABLE"), table, peewee.EnclosedNodeList(columns + constraints))))


def datatype_sql(database: peewee.Database, field: peewee.Field) -> str:
    return render(database, field.ddl_datatype(_context(database)))


def foreign_key_sql(database: peewee.Database, field: peewee.ForeignKeyField) -> str:
    return render(database, field.foreign_key_constraint(explicit_name=True))


def internal_column_sql(column: str) -> str:
    """The definition of an internal column (``DeclaredTable.internal``)."""
    return '"' + column.replace('"', '""') + '" ' + KEYS_TYPE


def column_sql(database: peewee.Database, field: peewee.Field) -> str:
    """A column's definition for ``ALTER TABLE ... ADD COLUMN``."""
    context = _context(database)
    parts: list[peewee.Node] = [field.ddl(context)]
    default = default_literal(database, field)
    if default is not None:
        parts.append(peewee.SQL(f"DEFAULT {default}"))
    if isinstance(field, peewee.ForeignKeyField):
        parts += [peewee.SQL("REFERENCES"), field.rel_model,
                  peewee.EnclosedNodeList((field.rel_field,))]
        if field.on_delete:
            parts.append(peewee.SQL(f"ON DELETE {field.on_delete}"))
    return render(database, peewee.NodeList(parts))


def default_literal(database: peewee.Database, field: peewee.Field) -> str | None:
    """The SQL literal of a NOT NULL field's constant default, else None
    (a callable default is the application's, computed per row)."""
    if field.null or field.default is None or callable(field.default) or field.primary_key:
        return None
    return _literal(database, field.db_value(field.default))  # type: ignore[no-untyped-call, unused-ignore]  # stubs


def _literal(database: peewee.Database, value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return ("1" if value else "0") if is_sqlite(database) else ("TRUE" if value else "FALSE")
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, (datetime.date, datetime.time)):
        value = value.isoformat(" ") if isinstance(value, datetime.datetime) else value.isoformat()
    return "'" + str(value).replace("'", "''") + "'"
