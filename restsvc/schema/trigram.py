"""Substring search that does not scan: a trigram index per indexed string
attribute, on the same lower-cased text the case-insensitive filters compare
(``db.lower``).

PostgreSQL: a GIN index with ``pg_trgm``'s ``gin_trgm_ops`` on ``lower(column)``;
the filter's ``lower(column) LIKE lower('%...%') ESCAPE '!'`` uses it as it
is. restsvc creates the extension (in ``public``) when it may; when it may not,
the start-up check says so and the filters keep scanning.

SQLite: an FTS5 table ``<table>_<column>_trgm`` (trigram tokenizer, case
folded) holding ``unicode_lower(column)`` under the row's rowid, kept in step
by three triggers on the table. The filter adds ``rowid IN (SELECT rowid ...
MATCH '"<value>"')`` to the unchanged LIKE (``data/read/query.py``): the match finds
every row whose lowered text holds the value (and perhaps a few more, which
the LIKE drops), so the answer is the scan's exactly. Trigrams need three
characters: shorter values scan.

Both are part of the declared schema (``declared.py``): ``restsvc migrate``
gives an existing database its indexes, a SQLite table rebuild remakes them.
"""
import logging
import re
from typing import NamedTuple

import peewee

from ..db import execute, is_sqlite

log = logging.getLogger("restsvc")

TRIGGERS = ("ai", "ad", "au")     # the kinds of trigger keeping an FTS table
_SHADOWS = ("data", "idx", "content", "docsize", "config")
MIN_LENGTH = 3          # characters a trigram match needs
SUFFIX = "_trgm"        # of every trigram index's name

Statements = tuple[str, ...]
# (name, sql, create statements, drop statements) of a declared index.
DeclaredIndex = tuple[str, str, Statements, Statements]
# (name, sql, drop statements, columns covered) of a trigram index found.
FoundIndex = tuple[str, str, Statements, tuple[str, ...]]


def index_name(table: str, column: str) -> str:
    return f"{table}_{column}{SUFFIX}"[:63]


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def declared_index(database: peewee.Database, model: type[peewee.Model], field: peewee.Field,
                   support: "Support") -> DeclaredIndex | None:
    """(name, sql, create statements, drop statements) of one field's trigram
    index, or None when the database cannot have one (``support``)."""
    if not support.available:
        return None
    table: str = model._meta.table_name
    column: str = field.column_name
    name = index_name(table, column)
    if not is_sqlite(database):
        assert support.schema is not None       # available on PostgreSQL: where pg_trgm is
        sql = (f"CREATE INDEX IF NOT EXISTS {_q(name)} ON {_q(table)} USING gin "
               f"(lower({_q(column)}) {_q(support.schema)}.gin_trgm_ops)")
        return name, sql, support.setup + (sql,), ()
    drop = tuple(f"DROP TRIGGER IF EXISTS {_q(f'{name}_{kind}')}" for kind in TRIGGERS) + (
        f"DROP TABLE IF EXISTS {_q(name)}",)
    sql = (f"CREATE VIRTUAL TABLE {_q(name)} USING fts5(v, "
           f"tokenize='trigram case_sensitive 0')")
    fts, t, c = _q(name), _q(table), _q(column)
    insert = f"INSERT INTO {fts}(rowid, v) SELECT new.rowid, unicode_lower(new.{c})"
    delete = f"DELETE FROM {fts} WHERE rowid = old.rowid"
    create = drop + (
        sql,
        f"INSERT INTO {fts}(rowid, v) SELECT rowid, unicode_lower({c}) FROM {t} "
        f"WHERE {c} IS NOT NULL",
        f"CREATE TRIGGER {_q(name + '_ai')} AFTER INSERT ON {t} WHEN new.{c} IS NOT NULL "
        f"BEGIN {insert}; END",
        f"CREATE TRIGGER {_q(name + '_ad')} AFTER DELETE ON {t} WHEN old.{c} IS NOT NULL "
        f"BEGIN {delete}; END",
        f"CREATE TRIGGER {_q(name + '_au')} AFTER UPDATE OF {c} ON {t} "
        f"BEGIN {delete}; {insert} WHERE new.{c} IS NOT NULL; END")
    return name, sql, create, drop


class Support:
    """Whether this database can hold trigram indexes, and if not, why."""

    def __init__(self, available: bool, reason: str | None = None, schema: str | None = None,
                 setup: Statements = ()) -> None:
        self.available, self.reason = available, reason
        self.schema = schema        # PostgreSQL: where pg_trgm's operator classes live
        self.setup = setup          # PostgreSQL: CREATE EXTENSION, when still to be done


def support(database: peewee.Database) -> Support:
    if is_sqlite(database):
        return _sqlite_support(database)
    return _postgres_support(database)


def _sqlite_support(database: peewee.Database) -> Support:
    try:
        execute(database, "CREATE VIRTUAL TABLE temp.restsvc_trgm_probe USING fts5("
                          "v, tokenize='trigram')")
        execute(database, "DROP TABLE temp.restsvc_trgm_probe")
    except Exception as exc:     # noqa: BLE001  (no FTS5, or a SQLite before 3.34)
        return Support(False, f"this SQLite has no FTS5 trigram tokenizer ({exc})")
    return Support(True)


def _postgres_support(database: peewee.Database) -> Support:
    row = execute(
        database,
        "SELECT (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
        "        ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'), "
        # "trusted" is PostgreSQL 13's; read as JSON, older servers answer false
        "(SELECT bool_or(coalesce((to_jsonb(v) ->> 'trusted')::boolean, false)) "
        " FROM pg_available_extension_versions v WHERE v.name = 'pg_trgm'), "
        "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), "
        "has_database_privilege(current_database(), 'CREATE') "
        "AND to_regnamespace('public') IS NOT NULL "
        "AND has_schema_privilege('public', 'CREATE')").fetchone()
    assert row is not None      # a SELECT without FROM has one row
    installed, trusted, superuser, may_create = row
    if installed:
        return Support(True, schema=installed)
    if trusted is None:
        return Support(False, "the pg_trgm extension is not installed on the server "
                              "(it comes with postgresql-contrib)")
    if not (superuser or (trusted and may_create)):
        return Support(False, "the database user may not create the pg_trgm extension "
                              "(a superuser can: CREATE EXTENSION pg_trgm SCHEMA public)")
    return Support(True, schema="public",
                   setup=("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public",))


def warn_unsupported(database: peewee.Database, reason: str | None) -> None:
    log.warning("substring search: %s; contains and endsWith filters scan the table. "
                "Once it is there, `restsvc migrate` creates the trigram indexes.", reason)


class Kept(NamedTuple):
    """An FTS table kept by three triggers on one table (``kept_tables``)."""
    name: str
    sql: str
    drop: Statements
    insert_trigger: str | None      # the insert trigger's SQL


def kept_tables(database: peewee.Database, suffix: str) -> tuple[set[str], dict[str, list[Kept]]]:
    """(names of the FTS5 tables whose names end with ``suffix`` and of their
    shadow tables, which are no tables of the model; {table: [Kept]} of the
    complete ones: the FTS table with its three triggers on one table)."""
    virtual: dict[str, str] = {name: sql for name, sql in execute(database,
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
        "ESCAPE '\\' AND sql LIKE 'CREATE VIRTUAL TABLE%'", ("%" + suffix.replace("_", "\\_"),))}
    hidden = set(virtual) | {f"{name}_{shadow}" for name in virtual for shadow in _SHADOWS}
    triggers: dict[str, str] = {}
    bodies: dict[str, str | None] = {}
    for name, table, body in execute(database,
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"):
        triggers[name], bodies[name] = table, body
    found: dict[str, list[Kept]] = {}
    for name, sql in virtual.items():
        owners = {triggers.get(f"{name}_{kind}") for kind in TRIGGERS}
        owner = owners.pop() if len(owners) == 1 else None
        if owner is not None:
            drop = tuple(f"DROP TRIGGER IF EXISTS {_q(f'{name}_{kind}')}" for kind in TRIGGERS
                         ) + (f"DROP TABLE IF EXISTS {_q(name)}",)
            found.setdefault(owner, []).append(Kept(name, sql, drop, bodies[f"{name}_ai"]))
    return hidden, found


def inspect_sqlite(database: peewee.Database) -> tuple[set[str], dict[str, list[FoundIndex]]]:
    """(names of FTS5 tables and their shadow tables, which are no tables of
    the model; {table: [(name, sql, drop)]} of the complete trigram indexes:
    the FTS table with its three triggers on one table, and the columns it
    covers: the one its name was made of, and the one its triggers read,
    which differ once a column was renamed under it)."""
    hidden, kept = kept_tables(database, SUFFIX)
    return hidden, {owner: [(index.name, index.sql, index.drop,
                             _covered(index.name, owner, index.insert_trigger))
                            for index in indexes] for owner, indexes in kept.items()}


_READ_COLUMN = re.compile(r'WHEN new\.("(?:[^"]|"")+"|\w+) IS NOT NULL', re.IGNORECASE)


def _covered(name: str, table: str, insert_trigger: str | None) -> tuple[str, ...]:
    """The columns a trigram index covers: by its name (unless cut to 63
    characters) and by what its insert trigger reads."""
    covers: list[str] = []
    prefix, suffix = f"{table}_", "_trgm"
    if len(name) < 63 and name.startswith(prefix) and name.endswith(suffix):
        covers.append(name[len(prefix):-len(suffix)])
    read = _READ_COLUMN.search(insert_trigger or "")
    if read is not None:
        column = read.group(1)
        column = column[1:-1].replace('""', '"') if column.startswith('"') else column
        if column not in covers:
            covers.append(column)
    return tuple(covers)


_PRESENT = "_restsvc_trigram_tables"


def present(database: peewee.Database) -> frozenset[str]:
    """The names of the complete trigram FTS tables of a SQLite database, read
    once per database object (``forget`` after the schema changed)."""
    known: frozenset[str] | None = getattr(database, _PRESENT, None)
    if known is None:
        _, found = kept_tables(database, SUFFIX)
        known = frozenset(index.name for indexes in found.values() for index in indexes)
        setattr(database, _PRESENT, known)
    return known


def forget(database: peewee.Database) -> None:
    if hasattr(database, _PRESENT):
        delattr(database, _PRESENT)


def match_table(database: peewee.Database, op: str, field: peewee.Field, value: str) -> str | None:
    """The FTS table whose match narrows a ``contains``/``endsWith`` on ``field``
    (SQLite), or None: the scan alone answers."""
    if op not in ("contains", "endsWith") or not is_sqlite(database):
        return None
    if len(value.lower()) < MIN_LENGTH or "\x00" in value:
        return None
    name = index_name(field.model._meta.table_name, field.column_name)
    return name if name in present(database) else None


def match_query(value: str) -> str:
    """An FTS5 phrase of the lowered value: every trigram of it, in order."""
    return '"' + value.lower().replace('"', '""') + '"'
