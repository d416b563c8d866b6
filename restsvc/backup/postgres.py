"""PostgreSQL: restsvc's tables COPYed out in one REPEATABLE READ, READ ONLY
transaction, so the archive holds one consistent state: every write committed
before the transaction's snapshot, none after, while the service keeps
writing (a reader blocks no writer).

A restore creates the schema of the running model with restsvc's own
migration steps (the same ``restsvc migrate`` runs on a new database), then
COPYs each table's rows in (parents before children, so every foreign key
holds; the link-key triggers are off meanwhile: the keys columns come from
the backup as they were; the secondary indexes are dropped first and built
again over all rows afterwards), sets every serial column's sequence past its
largest value, and keeps the backup's schema history followed by the record
of the restore itself. All of it is one transaction: it happens whole or not
at all. A backup taken before a migration restores into the newer model (its
columns are a subset); one with columns the model no longer declares is
refused (restore it with the restsvc version that wrote it, then migrate).
"""
from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable, Sequence
from typing import IO, Any

from ..schema.inspect import inspect_database
from .archive import BackupError, VerifiedReader, private_temp_file
from .manifest import HISTORY_SQL, HISTORY_TABLE, HistoryRow, Manifest, TablePart

# A DB-API cursor of psycopg2, which comes without type information.
Cursor = Any
# A peewee PostgresqlDatabase: peewee's stubs leave connection(), cursor() and
# execute_sql() unannotated, which mypy --strict refuses to call on the class.
Database = Any


def quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class _CountingWriter:
    """COPY's text output into a file; one line per row."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target, self.rows = target, 0

    def write(self, data: bytes | str) -> int:
        raw = data.encode() if isinstance(data, str) else data
        self.rows += raw.count(b"\n")
        return int(self.target.write(raw))


def snapshot(database: Database, declared: Iterable[str], directory: str
             ) -> tuple[list[tuple[TablePart, str]], tuple[dict[str, str], ...]]:
    """([(table, file of its rows)], schema history), all read in one snapshot."""
    connection = database.connection()
    connection.rollback()
    cursor = connection.cursor()
    parts: list[tuple[TablePart, str]] = []
    try:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        existing = {row[0] for row in cursor.fetchall()}
        for name in sorted(existing & set(declared)):
            cursor.execute(
                "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = "
                "current_schema() AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
                "ORDER BY a.attnum", (name,))
            columns = tuple(row[0] for row in cursor.fetchall())
            fd, path = private_temp_file(directory, "table-")
            with os.fdopen(fd, "wb") as target:
                writer = _CountingWriter(target)
                cursor.copy_expert(f"COPY {quote(name)} ({', '.join(map(quote, columns))}) "
                                   f"TO STDOUT", writer)
            member = f"database/{name}.copy"
            parts.append((TablePart(name, writer.rows, columns, member), path))
        records: tuple[dict[str, str], ...] = ()
        if HISTORY_TABLE in existing:
            cursor.execute(HISTORY_SQL)
            records = tuple(HistoryRow._make(row).as_json() for row in cursor.fetchall())
        return parts, records
    except BaseException:
        for _, path in parts:
            os.unlink(path)
        raise
    finally:
        connection.rollback()


def is_empty(database: Database) -> bool:
    return not database.execute_sql(
        "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() LIMIT 1").fetchone()


def restore(database: Database, tar: tarfile.TarFile, manifest: Manifest) -> None:
    """The rows into the schema just created, in the caller's transaction
    (``schema.migration_lock``)."""
    actual = inspect_database(database)
    for table in manifest.tables:
        if table.name not in actual:
            raise BackupError(f"the backup's table {table.name} is not in the model: it was "
                              f"written by a newer model; restore it with that version")
        unknown = [c for c in table.columns if c not in actual[table.name].columns]
        if unknown:
            raise BackupError(f"the backup's table {table.name} has columns the model does not "
                              f"declare ({', '.join(unknown)}); restore it with the restsvc "
                              f"version that wrote it, then migrate")
    parents = {name: {fk.table for fk in table.foreign_keys.values()} - {name}
               for name, table in actual.items()}
    ordered = _parents_first([t.name for t in manifest.tables], parents)
    by_name = {t.name: t for t in manifest.tables}
    cursor = database.cursor()
    indexes = _secondary_indexes(cursor, ordered)
    for name in ordered:
        cursor.execute(f"ALTER TABLE {quote(name)} DISABLE TRIGGER USER")
    for index, _ in indexes:        # built once over all rows: much faster than row by row
        cursor.execute(f"DROP INDEX {quote(index)}")
    cursor.execute(f"DELETE FROM {HISTORY_TABLE}")   # the backup's history comes instead
    for name in ordered:
        _copy_in(cursor, tar, manifest, by_name[name])
    for _, definition in indexes:
        cursor.execute(definition)
    for name in ordered:
        cursor.execute(f"ALTER TABLE {quote(name)} ENABLE TRIGGER USER")
    _advance_sequences(cursor)


def _secondary_indexes(cursor: Cursor, tables: Sequence[str]) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) of the tables' indexes that no
    constraint owns (primary keys stay: the foreign keys need them)."""
    cursor.execute(
        "SELECT i.relname, pg_get_indexdef(x.indexrelid) FROM pg_index x "
        "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
        "JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema() "
        "AND t.relname = ANY(%s) AND NOT EXISTS (SELECT 1 FROM pg_constraint c "
        "WHERE c.conindid = x.indexrelid) ORDER BY i.relname", (list(tables),))
    return [(name, definition) for name, definition in cursor.fetchall()]


def _copy_in(cursor: Cursor, tar: tarfile.TarFile, manifest: Manifest, table: TablePart) -> None:
    source = tar.extractfile(table.member)
    if source is None:
        raise BackupError(f"the archive lacks {table.member}")
    reader = VerifiedReader(table.member, source, manifest.members[table.member])
    cursor.copy_expert(f"COPY {quote(table.name)} ({', '.join(map(quote, table.columns))}) "
                       f"FROM STDIN", reader)
    reader.check()
    if cursor.rowcount not in (-1, table.rows):
        raise BackupError(f"{table.name}: {cursor.rowcount} rows restored, the manifest "
                          f"says {table.rows}")


def _parents_first(names: Sequence[str], parents: dict[str, set[str]]) -> list[str]:
    """The tables ordered so that each comes after the tables it references
    (a cycle keeps its members in name order; its foreign keys then say why)."""
    wanted, done, ordered = set(names), set[str](), list[str]()
    pending = sorted(names)
    while pending:
        ready = [n for n in pending if not (parents.get(n, set()) & wanted) - done]
        for name in ready or pending[:1]:
            ordered.append(name)
            done.add(name)
        pending = [n for n in pending if n not in done]
    return ordered


def _advance_sequences(cursor: Cursor) -> None:
    """Each serial column's sequence to one past its table's largest value."""
    cursor.execute(
        "SELECT c.relname, a.attname, pg_get_serial_sequence(quote_ident(current_schema()) || "
        "'.' || quote_ident(c.relname), a.attname) FROM pg_attribute a "
        "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 "
        "AND NOT a.attisdropped")
    for table, column, sequence in cursor.fetchall():
        if sequence:
            cursor.execute(f"SELECT setval(%s, COALESCE((SELECT max({quote(column)}) FROM "
                           f"{quote(table)}), 0) + 1, false)", (sequence,))

