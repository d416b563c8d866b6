"""The ``restsvc_migration`` table: each applied migration, when, by which
restsvc version, with the checksum of its SQL."""
import datetime
import hashlib
from importlib import metadata

import peewee

from ..db import database_proxy


class MigrationRecord(peewee.Model):
    id = peewee.AutoField()         # the one peewee adds, named for the type checker
    name = peewee.CharField(max_length=200)
    applied_at = peewee.DateTimeField()
    restsvc_version = peewee.CharField(max_length=50)
    checksum = peewee.CharField(max_length=64)
    steps = peewee.TextField()          # the SQL that ran

    class Meta:
        database = database_proxy
        table_name = "restsvc_migration"


def restsvc_version() -> str:
    try:
        return metadata.version("restsvc")
    except metadata.PackageNotFoundError:
        return "unknown"


def checksum(sql_text: str) -> str:
    return hashlib.sha256(sql_text.encode("utf-8")).hexdigest()


def record(name: str, sql_text: str, now: datetime.datetime | None = None) -> None:
    """Written in the migration's own transaction: it exists only if the steps do."""
    MigrationRecord.insert(
        name=name, applied_at=now or datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None, microsecond=0),
        restsvc_version=restsvc_version(), checksum=checksum(sql_text), steps=sql_text).execute()


def applied(database: peewee.Database) -> list[MigrationRecord]:
    """[MigrationRecord] in the order applied; none before the first migration."""
    if not database.table_exists(MigrationRecord._meta.table_name):
        return []
    return list(MigrationRecord.select().order_by(MigrationRecord.id))
