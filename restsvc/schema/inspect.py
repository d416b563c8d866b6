"""What a live database holds: tables, columns, indexes and foreign keys.

One inspection reads the whole schema in a handful of queries (per table on
SQLite, per catalog on PostgreSQL), so a start-up check stays cheap. Types are
kept in a normalized spelling that ``declared.py`` produces for the model too.
"""
import re
from dataclasses import dataclass, field
from typing import NamedTuple

import peewee

from ..db import execute, is_sqlite
from . import fulltext, trigram


@dataclass(frozen=True)
class Column:
    name: str
    type: str               # normalized, e.g. "varchar(200)", "integer"
    null: bool
    default: str | None = None     # the database's default expression, if any


@dataclass(frozen=True)
class Index:
    name: str
    unique: bool
    sql: str                # the definition, to tell which columns it covers
    create: tuple[str, ...] = ()      # the statements that make it, when not just ``sql``
    drop: tuple[str, ...] = ()        # the statements that remove it, when not ``DROP INDEX``
    covers: tuple[str, ...] = ()      # the columns it covers when ``sql`` does not name them (SQLite
                                      # trigram indexes: an FTS table kept by triggers, in its order)

    def creating(self) -> tuple[str, ...]:
        return self.create or (self.sql,)


@dataclass(frozen=True)
class ForeignKey:
    column: str
    table: str
    to_column: str
    name: str | None = None        # the constraint name (PostgreSQL)


@dataclass(frozen=True)
class Trigger:
    name: str
    function: str | None = None     # PostgreSQL: the function it executes


class DeclaredIndex(NamedTuple):
    """One of ``trigram.declared_indexes`` or ``fulltext.declared_index``'s
    (name, sql, create, drop[, covers]), by name."""
    name: str
    sql: str
    create: tuple[str, ...]
    drop: tuple[str, ...]
    covers: tuple[str, ...] = ()


# The rows of the catalog queries below, by name.
class _SqliteColumn(NamedTuple):     # PRAGMA table_info
    cid: int
    name: str
    type: str
    notnull: int
    default: str | None
    pk: int


class _PostgresColumn(NamedTuple):
    table: str
    name: str
    type: str
    notnull: bool
    default: str | None


class _PostgresIndex(NamedTuple):
    table: str
    name: str
    unique: bool
    sql: str


class _PostgresForeignKey(NamedTuple):
    table: str
    name: str
    column: str
    target: str
    to_column: str


@dataclass
class Table:
    name: str
    columns: dict[str, Column] = field(default_factory=dict)       # in table order
    indexes: dict[str, Index] = field(default_factory=dict)
    foreign_keys: dict[str, ForeignKey] = field(default_factory=dict)  # by column
    triggers: dict[str, Trigger] = field(default_factory=dict)


# PostgreSQL's catalog names -> the spelling peewee declares (lower case).
_PG_ALIASES = {"character varying": "varchar", "timestamp without time zone": "timestamp",
               "time without time zone": "time", "int": "integer", "int4": "integer",
               "int8": "bigint", "decimal": "numeric", "serial": "integer",
               "bigserial": "bigint", "bool": "boolean", "float8": "double precision",
               "float4": "real", "character": "char"}


def normalize_type(text: str | None) -> str:
    """``VARCHAR(200)``, ``character varying(200)`` -> ``varchar(200)``."""
    text = re.sub(r"\s*,\s*", ",", re.sub(r"\s+", " ", (text or "").strip().lower()))
    base, paren, rest = text.partition("(")
    base = _PG_ALIASES.get(base.strip(), base.strip())
    return f"{base}({rest}" if paren else base


def inspect_database(database: peewee.Database) -> dict[str, Table]:
    """{table name: Table} of the tables the connection's schema holds."""
    return _inspect_sqlite(database) if is_sqlite(database) else _inspect_postgres(database)


def _inspect_sqlite(database: peewee.Database) -> dict[str, Table]:
    tables: dict[str, Table] = {}
    # The trigram indexes' FTS5 tables are indexes of the table their triggers are on.
    hidden, substring = trigram.inspect_sqlite(database)
    # So are the full-text indexes' (fulltext.py).
    text_hidden, text_indexes = fulltext.inspect_sqlite(database)
    hidden |= text_hidden
    names = [row[0] for row in execute(database,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]
    for name in names:
        if name in hidden:
            continue
        table = tables[name] = Table(name)
        quoted = name.replace('"', '""')
        for column in map(_SqliteColumn._make,
                          execute(database, f'PRAGMA table_info("{quoted}")')):
            table.columns[column.name] = Column(column.name, normalize_type(column.type),
                                                not column.notnull, column.default)
        for index, sql in execute(database,
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                "AND sql IS NOT NULL ORDER BY name", (name,)):
            table.indexes[index] = Index(index, sql.upper().startswith("CREATE UNIQUE"), sql)
        for found in substring.get(name, ()):
            table.indexes[found.name] = Index(found.name, False, found.sql, drop=found.drop,
                                              covers=found.covers)
        for kept in text_indexes.get(name, ()):
            table.indexes[kept.name] = Index(kept.name, False, kept.sql, drop=kept.drop)
        for row in execute(database, f'PRAGMA foreign_key_list("{quoted}")'):
            table.foreign_keys[row[3]] = ForeignKey(row[3], row[2], row[4])
    for name, table in execute(database,
            "SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"):
        if table in tables:
            tables[table].triggers[name] = Trigger(name)
    return tables


def _inspect_postgres(database: peewee.Database) -> dict[str, Table]:
    tables = {name: Table(name) for (name,) in execute(database,
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")}
    for column in map(_PostgresColumn._make, execute(database,
            "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 "
            "AND NOT a.attisdropped ORDER BY c.relname, a.attnum")):
        if column.table in tables:
            tables[column.table].columns[column.name] = Column(
                column.name, normalize_type(column.type), not column.notnull, column.default)
    for index in map(_PostgresIndex._make, execute(database,
            "SELECT t.relname, i.relname, x.indisunique, pg_get_indexdef(x.indexrelid) "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE n.nspname = current_schema() AND NOT x.indisprimary ORDER BY i.relname")):
        if index.table in tables:
            tables[index.table].indexes[index.name] = Index(index.name, index.unique, index.sql)
    for key in map(_PostgresForeignKey._make, execute(database,
            "SELECT c.relname, k.conname, a.attname, r.relname, ra.attname "
            "FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_class r ON r.oid = k.confrelid "
            "JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1] "
            "JOIN pg_attribute ra ON ra.attrelid = k.confrelid AND ra.attnum = k.confkey[1] "
            "WHERE k.contype = 'f' AND n.nspname = current_schema() ORDER BY k.conname")):
        if key.table in tables:
            tables[key.table].foreign_keys[key.column] = ForeignKey(key.column, key.target,
                                                                    key.to_column, key.name)
    for table, name, function in execute(database,
            "SELECT c.relname, t.tgname, p.proname FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
            "JOIN pg_proc p ON p.oid = t.tgfoid "
            "WHERE NOT t.tgisinternal AND n.nspname = current_schema() ORDER BY t.tgname"):
        if table in tables:
            tables[table].triggers[name] = Trigger(name, function)
    return tables


def index_covers(index: Index, column: str) -> bool:
    """Whether an index's definition names ``column`` (plain or quoted)."""
    if column in index.covers:
        return True
    target = index.sql.split(" ON ", 1)[-1]
    target = target[target.find("("):]
    return re.search(rf'(?<!\w){re.escape(column)}(?!\w)', target) is not None
