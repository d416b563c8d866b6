"""SQLite: the backup API copies the database through a connection of its
own. In one step it reads one consistent state (in WAL mode the service's
writers go on meanwhile; what they commit afterwards is not in the copy), so
every write committed before the copy began is in it. A restore puts the copy
in place of an empty database by renaming a verified file, whole or not at all.
"""
from __future__ import annotations

import os
import sqlite3
import tarfile

from .archive import BackupError, Member, copy_verified, private_temp_file
from .manifest import HISTORY_SQL, HistoryRow, TablePart

MEMBER = "database/restsvc.sqlite"


def snapshot(path: str, directory: str) -> str:
    """A consistent copy of the database at ``path``, an owner-only file in ``directory``."""
    if not os.path.exists(path):
        raise BackupError(f"the database {path} does not exist")
    fd, copy = private_temp_file(directory, "database-")
    os.close(fd)
    source, target = sqlite3.connect(path), sqlite3.connect(copy)
    try:
        source.execute("PRAGMA busy_timeout = 30000")
        source.backup(target)           # pages=-1: all of it in one step, one snapshot
        # One self-contained file (no -wal beside it); restsvc sets WAL again when it opens it.
        target.execute("PRAGMA journal_mode = DELETE")
    finally:
        source.close()
        target.close()
    return copy


def tables(path: str) -> tuple[TablePart, ...]:
    """Each table of the copy with its row count (for the manifest)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name")]
        return tuple(TablePart(name, connection.execute(
            f'SELECT count(*) FROM "{name.replace(chr(34), chr(34) * 2)}"').fetchone()[0])
            for name in names)
    finally:
        connection.close()


def history(path: str) -> tuple[dict[str, str], ...]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if not connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                  "name = 'restsvc_migration'").fetchone():
            return ()
        return tuple(HistoryRow._make(row).as_json()
                     for row in connection.execute(HISTORY_SQL))
    finally:
        connection.close()


def is_empty(path: str) -> bool:
    """Whether there is no database at ``path`` yet, or one without tables."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return True
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        count: int = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        return count == 0
    finally:
        connection.close()


def restore(tar: tarfile.TarFile, expected: Member, path: str) -> None:
    """The archive's database in place of the empty one at ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temp = private_temp_file(directory, f".{os.path.basename(path)}.restore-")
    try:
        with os.fdopen(fd, "wb") as target:
            source = tar.extractfile(MEMBER)
            if source is None:
                raise BackupError(f"the archive lacks {MEMBER}")
            copy_verified(MEMBER, source, expected, target)
            target.flush()
            os.fsync(target.fileno())
        connection = sqlite3.connect(temp)
        try:
            problem = connection.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            connection.close()
        if problem != "ok":
            raise BackupError(f"the archive's database fails SQLite's check: {problem}")
        if not is_empty(path):
            raise BackupError(f"the database {path} is not empty (any more); nothing was restored")
        for suffix in ("-wal", "-shm"):     # an empty database's, or they would be replayed
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
