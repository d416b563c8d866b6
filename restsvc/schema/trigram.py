"""Substring search that does not scan: a trigram index per indexed string
attribute, on the same lower-cased text the case-insensitive filters compare
(``db.lower``).

PostgreSQL: a GIN index with ``pg_trgm``'s ``gin_trgm_ops`` on ``lower(column)``;
the filter's ``lower(column) LIKE lower('%...%') ESCAPE '!'`` uses it as it
is. restsvc creates the extension (in ``public``) when it may; when it may not,
the start-up check says so and the filters keep scanning.

SQLite: one FTS5 table ``<table>_trgm`` per table (trigram tokenizer, case
folded), one row per row of the table under its rowid, one FTS column per
indexed column (``v0``, ``v1``, ... in the declared order; the insert
trigger says which column each holds) holding ``unicode_lower(column)``,
kept in step by three triggers on the table (insert; delete; update of
those columns: delete and insert). One row per row, not one FTS table per
column: a write pays one FTS insert whatever the number of indexed columns
(issue 41). The filter adds ``rowid IN (SELECT rowid ... MATCH '{v1} :
"<value>"')`` to the unchanged LIKE (``data/read/query.py``), the match
restricted to the column's FTS column: it finds every row whose lowered
text holds the value (and perhaps a few more, which the LIKE drops), so the
answer is the scan's exactly. Trigrams need three characters: shorter
values scan. An older restsvc's per-column tables (``<table>_<column>_trgm``)
are derived data: ``restsvc migrate`` replaces them without asking.

Both are part of the declared schema (``declared.py``): ``restsvc migrate``
gives an existing database its indexes, a SQLite table rebuild remakes them.
"""
import logging
import re
from collections.abc import Sequence
from typing import NamedTuple

import peewee

from ..db import execute, is_sqlite

log = logging.getLogger("restsvc")

TRIGGERS = ("ai", "ad", "au")     # the kinds of trigger keeping an FTS table
_SHADOWS = ("data", "idx", "content", "docsize", "config")
MIN_LENGTH = 3          # characters a trigram match needs
SUFFIX = "_trgm"        # of every trigram index's name

Statements = tuple[str, ...]
# (name, sql, create statements, drop statements, columns covered: SQLite's, in
# the FTS table's order) of a declared index.
DeclaredIndex = tuple[str, str, Statements, Statements, tuple[str, ...]]


class FoundIndex(NamedTuple):
    """A trigram index found in a SQLite database (``inspect_sqlite``)."""
    name: str
    sql: str
    drop: Statements
    covers: tuple[str, ...]


def index_name(table: str, column: str | None = None) -> str:
    """A table's trigram index (SQLite: one FTS table; ``column`` None; SQLite
    has no limit on names, so it keeps its suffix), or a column's (PostgreSQL,
    cut to its 63 characters, and SQLite's per-column tables of before)."""
    return f"{table}{SUFFIX}" if column is None else f"{table}_{column}{SUFFIX}"[:63]


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def fts_column(position: int) -> str:
    """The FTS column holding the ``position``-th indexed column: positional,
    so no column name meets FTS5's reserved ones (``rank``, ``rowid``, the
    table's own name); the insert trigger says which column each one holds."""
    return f"v{position}"


def declared_indexes(database: peewee.Database, model: type[peewee.Model],
                     fields: Sequence[peewee.Field], support: "Support") -> list[DeclaredIndex]:
    """The trigram indexes of a table's indexed string ``fields``: on
    PostgreSQL one per field; on SQLite one FTS table of them all, one row
    per row of the table; none when the database cannot have them (``support``)."""
    if not support.available or not fields:
        return []
    table: str = model._meta.table_name
    if not is_sqlite(database):
        assert support.schema is not None       # available on PostgreSQL: where pg_trgm is
        indexes: list[DeclaredIndex] = []
        for field in fields:
            name = index_name(table, field.column_name)
            sql = (f"CREATE INDEX IF NOT EXISTS {_q(name)} ON {_q(table)} USING gin "
                   f"(lower({_q(field.column_name)}) {_q(support.schema)}.gin_trgm_ops)")
            indexes.append((name, sql, support.setup + (sql,), (), ()))
        return indexes
    name = index_name(table)
    columns = tuple(field.column_name for field in fields)
    drop = drop_kept(name)
    held = ", ".join(fts_column(i) for i in range(len(columns)))
    targets = f"rowid, {held}"
    sql = (f"CREATE VIRTUAL TABLE {_q(name)} USING fts5({held}, "
           f"tokenize='trigram case_sensitive 0')")
    fts, t = _q(name), _q(table)
    lowered = ", ".join(f"unicode_lower(new.{_q(c)})" for c in columns)
    insert = f"INSERT INTO {fts}({targets}) SELECT new.rowid, {lowered}"
    delete = f"DELETE FROM {fts} WHERE rowid = old.rowid"
    create = drop + (
        sql,
        f"INSERT INTO {fts}({targets}) SELECT rowid, "
        + ", ".join(f"unicode_lower({_q(c)})" for c in columns) + f" FROM {t}",
        f"CREATE TRIGGER {_q(name + '_ai')} AFTER INSERT ON {t} BEGIN {insert}; END",
        f"CREATE TRIGGER {_q(name + '_ad')} AFTER DELETE ON {t} BEGIN {delete}; END",
        f"CREATE TRIGGER {_q(name + '_au')} AFTER UPDATE OF {', '.join(map(_q, columns))} "
        f"ON {t} BEGIN {delete}; {insert}; END")
    return [(name, sql, create, drop, columns)]


def drop_kept(name: str) -> Statements:
    """Drops an FTS table kept by triggers (``kept_tables``), its triggers first."""
    return tuple(f"DROP TRIGGER IF EXISTS {_q(f'{name}_{kind}')}" for kind in TRIGGERS) + (
        f"DROP TABLE IF EXISTS {_q(name)}",)


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
            found.setdefault(owner, []).append(Kept(name, sql, drop_kept(name), bodies[f"{name}_ai"]))
    return hidden, found


def inspect_sqlite(database: peewee.Database) -> tuple[set[str], dict[str, list[FoundIndex]]]:
    """(names of FTS5 tables and their shadow tables, which are no tables of
    the model; {table: [(name, sql, drop, covers)]} of the complete trigram
    indexes: the FTS table with its three triggers on one table, and the
    columns it covers: those its insert trigger reads, in the FTS table's
    order; for a per-column table of before, also the one its name was made
    of, which differs once a column was renamed under it)."""
    hidden, kept = kept_tables(database, SUFFIX)
    return hidden, {owner: [FoundIndex(index.name, index.sql, index.drop,
                                       _covered(index.name, owner, index.insert_trigger))
                            for index in indexes] for owner, indexes in kept.items()}


_READ_COLUMN = re.compile(r'unicode_lower\(new\.("(?:[^"]|"")+"|\w+)\)', re.IGNORECASE)


def _covered(name: str, table: str, insert_trigger: str | None) -> tuple[str, ...]:
    """The columns a trigram index covers: what its insert trigger reads, in
    order; and for a per-column table of before, the column of its name
    (unless cut to 63 characters)."""
    covers: list[str] = []
    for column in _READ_COLUMN.findall(insert_trigger or ""):
        covers.append(column[1:-1].replace('""', '"') if column.startswith('"') else column)
    prefix = f"{table}_"
    if (name != index_name(table) and len(name) < 63 and name.startswith(prefix)
            and name.endswith(SUFFIX) and name[len(prefix):-len(SUFFIX)] not in covers):
        covers.append(name[len(prefix):-len(SUFFIX)])
    return tuple(covers)


_PRESENT = "_restsvc_trigram_tables"
# {FTS table: {column: its FTS column}} of the complete trigram indexes.
Present = dict[str, dict[str, str]]


def present(database: peewee.Database) -> Present:
    """The complete trigram FTS tables of a SQLite database, each with the FTS
    column of each column it covers; read once per database object
    (``forget`` after the schema changed)."""
    known: Present | None = getattr(database, _PRESENT, None)
    if known is None:
        _, found = inspect_sqlite(database)
        known = {index.name: {column: fts_column(i) for i, column in enumerate(index.covers)}
                 for table, indexes in found.items() for index in indexes
                 if index.name == index_name(table)}
        setattr(database, _PRESENT, known)
    return known


def forget(database: peewee.Database) -> None:
    if hasattr(database, _PRESENT):
        delattr(database, _PRESENT)


class Match(NamedTuple):
    """Where a ``contains``/``endsWith`` is narrowed on SQLite: the FTS table,
    and the query of the lowered value in the FTS column of its column."""
    table: str
    query: str


def match(database: peewee.Database, op: str, field: peewee.Field, value: str) -> Match | None:
    """The FTS match that narrows a ``contains``/``endsWith`` on ``field``
    (SQLite), or None: the scan alone answers."""
    if op not in ("contains", "endsWith") or not is_sqlite(database):
        return None
    if len(value.lower()) < MIN_LENGTH or "\x00" in value:
        return None
    name = index_name(field.model._meta.table_name)
    column = present(database).get(name, {}).get(field.column_name)
    return None if column is None else Match(name, f"{{{column}}} : {match_query(value)}")


def match_query(value: str) -> str:
    """An FTS5 phrase of the lowered value: every trigram of it, in order."""
    return '"' + value.lower().replace('"', '""') + '"'
