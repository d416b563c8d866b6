"""Ranked full-text search: one index per entity that declares searchable
attributes (``@entity(search={"name": "A", "description": "B"})``).

SQLite: an FTS5 table ``<table>_<digest>_fts`` with one column per
searchable attribute (named as the table's columns) under the row's rowid,
kept in step by three triggers on the table. Its tokenizer is ``unicode61
remove_diacritics 2`` (words are runs of letters and digits, case and
diacritics folded), behind ``porter`` (English stemming) when the language
is ``english``. Relevance is ``bm25`` with the weights of ``WEIGHTS``.

PostgreSQL: a GIN index on the weighted ``tsvector`` of the searchable
columns (``vector``: ``setweight(to_tsvector('<language>', coalesce(c, '')),
'<weight>') || ...``); the database keeps it itself. Relevance is
``ts_rank_cd`` over the same vector.

The index's name holds a digest of its columns, weights and language: a
changed declaration or ``svc.search.language`` is a new index, which
``restsvc migrate`` creates, dropping the old one (derived data, no loss).
"""
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import peewee

from ..db import is_sqlite
from . import trigram

SUFFIX = "_fts"         # of every full-text index's name
# The declared weight letters (PostgreSQL's) and bm25's column weights for
# them: ts_rank_cd's default weights {D 0.1, C 0.2, B 0.4, A 1.0}.
WEIGHTS = {"A": 1.0, "B": 0.4, "C": 0.2, "D": 0.1}

Statements = tuple[str, ...]


@dataclass(frozen=True)
class FullText:
    """The full-text index of one entity's table."""
    table: str
    columns: tuple[str, ...]    # the searchable attributes' columns, in declared order
    weights: tuple[str, ...]    # their weight letters (``WEIGHTS``)
    language: str               # PostgreSQL's text search configuration (svc.search.language)

    @property
    def name(self) -> str:
        digest = hashlib.sha256(repr((self.columns, self.weights, self.language)).encode()
                                ).hexdigest()[:8]
        return f"{self.table[:50]}_{digest}{SUFFIX}"

    @property
    def tokenizer(self) -> str:
        """SQLite's FTS5 tokenizer: English stemming for ``english`` only."""
        plain = "unicode61 remove_diacritics 2"
        return f"porter {plain}" if self.language == "english" else plain


def _q(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def vector(index: FullText, columns: Sequence[peewee.Node], positions: Sequence[int],
           ) -> peewee.Node:
    """PostgreSQL's weighted tsvector of the columns at ``positions`` (each
    given as the node a statement refers to it by): the index's expression
    when they are all of them."""
    language = peewee.SQL(f"'{index.language}'::regconfig")
    parts = [peewee.fn.setweight(peewee.fn.to_tsvector(
                 language, peewee.fn.coalesce(columns[at], peewee.SQL("''"))),
             peewee.SQL(f"'{index.weights[at]}'")) for at in positions]
    return parts[0] if len(parts) == 1 else peewee.NodeList(parts, " || ", parens=True)


def declared_index(database: peewee.Database, index: FullText) -> tuple[str, str, Statements,
                                                                         Statements]:
    """(name, sql, create statements, drop statements) of the index."""
    name, table = index.name, _q(index.table)
    if not is_sqlite(database):
        columns = [peewee.Entity(column) for column in index.columns]
        expression = database.get_sql_context().sql(   # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs
            vector(index, columns, range(len(columns)))).query()[0]
        sql = f"CREATE INDEX IF NOT EXISTS {_q(name)} ON {table} USING gin (({expression}))"
        return name, sql, (sql,), ()
    fts = _q(name)
    drop = trigram.drop_kept(name)
    listed = ", ".join(map(_q, index.columns))
    news = ", ".join(f"new.{_q(column)}" for column in index.columns)
    sql = f"CREATE VIRTUAL TABLE {fts} USING fts5({listed}, tokenize='{index.tokenizer}')"
    insert = f"INSERT INTO {fts}(rowid, {listed}) VALUES (new.rowid, {news})"
    delete = f"DELETE FROM {fts} WHERE rowid = old.rowid"
    create = drop + (
        sql,
        f"INSERT INTO {fts}(rowid, {listed}) SELECT rowid, {listed} FROM {table}",
        f"CREATE TRIGGER {_q(name + '_ai')} AFTER INSERT ON {table} BEGIN {insert}; END",
        f"CREATE TRIGGER {_q(name + '_ad')} AFTER DELETE ON {table} BEGIN {delete}; END",
        f"CREATE TRIGGER {_q(name + '_au')} AFTER UPDATE OF {listed} ON {table} "
        f"BEGIN {delete}; {insert}; END")
    return name, sql, create, drop


def inspect_sqlite(database: peewee.Database) -> tuple[set[str], dict[str, list[trigram.Kept]]]:
    """``trigram.kept_tables`` of the full-text indexes: (names of their FTS
    tables and shadow tables, {table: [(name, sql, drop, insert trigger)]})."""
    return trigram.kept_tables(database, SUFFIX)


_PRESENT = "_restsvc_fulltext_tables"


def present(database: peewee.Database, index: FullText) -> bool:
    """Whether a SQLite database holds the index (its FTS table and triggers),
    read once per database object (``forget`` after the schema changed)."""
    known: frozenset[str] | None = getattr(database, _PRESENT, None)
    if known is None:
        _, found = inspect_sqlite(database)
        known = frozenset(kept.name for indexes in found.values() for kept in indexes)
        setattr(database, _PRESENT, known)
    return index.name in known


def forget(database: peewee.Database) -> None:
    if hasattr(database, _PRESENT):
        delattr(database, _PRESENT)

