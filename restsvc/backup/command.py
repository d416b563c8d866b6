"""The commands: ``restsvc backup`` takes the database first (one consistent
snapshot), then the file storage (every file a reference of the snapshot can
name was stored before it was answered, so before the snapshot), then writes
the manifest. ``restsvc restore`` refuses a non-empty database or storage and
an archive whose members do not match their checksums before it writes
anything; then it stages the files, restores the database in one step, moves
the files into place and migrates a schema older than the model."""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import peewee

from ..db import is_sqlite
from ..schema import DEFAULT_LOCK_TIMEOUT, survey
from ..schema import command as migrate_command
from ..schema.apply import apply_steps, migration_lock
from ..schema.history import MigrationRecord, record, restsvc_version
from . import files, manifest, postgres, sqlite
from .archive import ArchiveWriter, BackupError, is_compressed, private_output

if TYPE_CHECKING:
    from ..app import RestApp

Out = Callable[[str], None]


def default_output() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"restsvc-backup-{stamp}.tar"


def backup(app: "RestApp", output: str, out: Out) -> int:
    """``app``: a RestApp built without the start-up check."""
    with _database_errors("nothing was written"):
        return _backup(app, output, out)


def _backup(app: "RestApp", output: str, out: Out) -> int:
    database, root = app.database, os.path.abspath(app.settings.file_storage_dir)
    engine = "sqlite" if is_sqlite(database) else "postgresql"
    _yield_to_the_service()
    with private_output(output) as stream:
        scratch = tempfile.mkdtemp(prefix=".restsvc-backup-",
                                   dir=os.path.dirname(os.path.abspath(output)))
        try:
            writer = ArchiveWriter(stream, is_compressed(output))
            if engine == "sqlite":
                copy = sqlite.snapshot(database.database, scratch)
                tables, history = sqlite.tables(copy), sqlite.history(copy)
                writer.add_path(sqlite.MEMBER, copy)
            else:
                declared = [m._meta.table_name for m in app.models] + [
                    MigrationRecord._meta.table_name]
                parts, history = postgres.snapshot(database, declared, scratch)
                for table, path in parts:
                    writer.add_path(table.member, path)
                tables = tuple(table for table, _ in parts)
            stored = files.add_files(writer, root)
            written = manifest.Manifest(engine, restsvc_version(), manifest.now_text(), history,
                                        tables, dict(writer.members), stored)
            writer.add_bytes(manifest.NAME, written.to_json())
            writer.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            _close(database)
    for storage in app.settings.object_storages:
        out(f"note: the object storage {storage.name!r} is not part of the backup: back its "
            f"bucket up with the object store's own tools")
    size = os.path.getsize(output)
    out(f"backup written: {output} ({size / 1e6:.1f} MB; {len(tables)} tables, "
        f"{sum(t.rows for t in tables)} rows, {len(stored)} files)")
    return 0


def _yield_to_the_service() -> None:
    """The backup runs beside the service on the same machine: at a lower CPU
    priority, so the service's requests come first (the backup takes longer)."""
    try:
        os.nice(NICENESS)
    except OSError:
        pass


NICENESS = 10


def restore(app: "RestApp", path: str, out: Out) -> int:
    """``app``: a RestApp built without the start-up check or schema set-up."""
    with _database_errors("nothing was restored"):
        return _restore(app, path, out)


@contextmanager
def _database_errors(after: str) -> Iterator[None]:
    """The database's refusals and unreachability as a BackupError with its reason."""
    try:
        yield
    except _DRIVER_ERRORS as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BackupError(f"database error: {reason}; {after}") from None


def _driver_errors() -> tuple[type[Exception], ...]:
    try:
        import psycopg2     # the optional PostgreSQL driver: its COPY errors come unwrapped
    except ImportError:
        return peewee.PeeweeException, sqlite3.Error
    return peewee.PeeweeException, sqlite3.Error, psycopg2.Error


_DRIVER_ERRORS = _driver_errors()


def _restore(app: "RestApp", path: str, out: Out) -> int:
    database, root = app.database, os.path.abspath(app.settings.file_storage_dir)
    engine = "sqlite" if is_sqlite(database) else "postgresql"
    try:
        tar = tarfile.open(path, "r:*")
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"cannot read {path}: {exc}") from None
    try:
        with tar:
            found = manifest.read(tar)
            if found.engine != engine:
                raise BackupError(f"{path} is a backup of a {found.engine} database; "
                                  f"svc.datasource.url names a {engine} one")
            _check_empty(database, root)
            manifest.verify(tar, found)
            staging = files.stage(tar, found, root)
            try:
                if engine == "sqlite":
                    _close(database)
                    sqlite.restore(tar, found.members[sqlite.MEMBER], database.database)
                else:
                    _restore_postgres(app, tar, found)
            except BaseException:
                files.discard(staging)
                raise
            files.publish(staging, root, found.files)
    finally:
        _close(database)
    out(f"restored {path} (written {found.created_at} by restsvc "
        f"{found.restsvc_version}): {len(found.tables)} tables, "
        f"{sum(t.rows for t in found.tables)} rows, {len(found.files)} files")
    try:
        status: int = migrate_command.run(app, argparse.Namespace(
            status=False, plan=False, allow_destructive=False, no_backup=False,
            lock_timeout=DEFAULT_LOCK_TIMEOUT), out)
        return status
    except migrate_command.CommandFailed as exc:
        raise BackupError(f"the backup is restored, but {exc}") from None


def _check_empty(database: peewee.Database, root: str) -> None:
    empty = sqlite.is_empty(database.database) if is_sqlite(database) else \
        postgres.is_empty(database)
    if not empty:
        raise BackupError("the database of svc.datasource.url is not empty: a backup is "
                          "restored only into a new, empty database; nothing was changed")
    if not files.is_empty(root):
        raise BackupError(f"the file storage {root} (svc.file-storage.dir) is not empty: a "
                          f"backup is restored only into an empty one; nothing was changed")


def _restore_postgres(app: "RestApp", tar: tarfile.TarFile, found: manifest.Manifest) -> None:
    """Schema, rows, sequences and history in one transaction."""
    database = app.database
    name = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ-restore")
    with migration_lock(database, DEFAULT_LOCK_TIMEOUT):
        steps = survey(database, app.models, app.metadata.indexed_text_fields(),
                       app.metadata.full_text())[1]
        apply_steps(database, steps, name)
        postgres.restore(database, tar, found)
        record(name, "\n\n".join(step.text() for step in steps))


def _close(database: peewee.Database) -> None:
    getattr(database, "close_all", database.close)()
