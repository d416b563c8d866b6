"""The manifest: the archive's last member, ``manifest.json``. It names the
restsvc version and database engine that wrote the archive, the schema
history (``restsvc_migration``) of the database, each table's row count (and,
for PostgreSQL, its columns), and the SHA-256 and size of every other member.
A restore reads it first and checks every member against it before it
writes anything."""
from __future__ import annotations

import datetime
import hashlib
import json
import tarfile
from dataclasses import dataclass
from typing import NamedTuple

from ..files.storage import is_plain_path
from ..jsonio import JsonValue
from .archive import BackupError, Member

NAME = "manifest.json"
FORMAT = "restsvc-backup"
VERSION = 1
MAX_BYTES = 256 * 1024 * 1024        # a manifest lists every file: generous, still bounded
_SHA256 = frozenset("0123456789abcdef")


# The schema history as the manifest keeps it, read the same way from either engine.
HISTORY_TABLE = "restsvc_migration"
HISTORY_SQL = (f"SELECT name, applied_at, restsvc_version, checksum FROM {HISTORY_TABLE} "
               "ORDER BY id")


class HistoryRow(NamedTuple):
    """A row of ``HISTORY_SQL``."""
    name: str
    applied_at: object              # SQLite: text; PostgreSQL: a datetime
    restsvc_version: str
    checksum: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "appliedAt": str(self.applied_at),
                "restsvcVersion": self.restsvc_version, "checksum": self.checksum}


@dataclass(frozen=True)
class TablePart:
    name: str
    rows: int
    columns: tuple[str, ...] = ()       # PostgreSQL: the COPY's column list
    member: str = ""                    # PostgreSQL: the member holding its rows


@dataclass(frozen=True)
class Manifest:
    engine: str                          # "sqlite" | "postgresql"
    restsvc_version: str
    created_at: str
    schema_history: tuple[dict[str, str], ...]
    tables: tuple[TablePart, ...]
    members: dict[str, Member]
    files: tuple[str, ...]               # paths in the fs storage, each a member files/<path>

    def to_json(self) -> bytes:
        return json.dumps({
            "format": FORMAT, "version": VERSION, "engine": self.engine,
            "restsvcVersion": self.restsvc_version, "createdAt": self.created_at,
            "schemaHistory": list(self.schema_history),
            "tables": [{"name": t.name, "rows": t.rows, "columns": list(t.columns),
                        "member": t.member} for t in self.tables],
            "files": {"storage": "fs", "count": len(self.files),
                      "bytes": sum(self.members[file_member(p)].size for p in self.files),
                      "paths": list(self.files)},
            "members": {name: {"sha256": m.sha256, "size": m.size}
                        for name, m in self.members.items()},
        }, indent=1).encode()


def file_member(path: str) -> str:
    return f"files/{path}"


def now_text() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read(tar: tarfile.TarFile) -> Manifest:
    """The archive's manifest, its shape checked; BackupError otherwise."""
    try:
        info = tar.getmember(NAME)
    except KeyError:
        raise BackupError("not a restsvc backup: the archive has no manifest.json") from None
    if not info.isreg() or info.size > MAX_BYTES:
        raise BackupError("not a restsvc backup: its manifest.json is not a plain file "
                          "of a readable size")
    stream = tar.extractfile(info)
    assert stream is not None
    try:
        return _parse(json.loads(stream.read()))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BackupError(f"not a restsvc backup: its manifest.json is malformed ({exc})") from None


def _parse(data: JsonValue) -> Manifest:
    if data.get("format") != FORMAT:
        raise ValueError("format is not restsvc-backup")
    if data.get("version") != VERSION:
        raise BackupError(f"the archive's format version {data.get('version')!r} is not one "
                          f"this restsvc reads ({VERSION})")
    if data["engine"] not in ("sqlite", "postgresql"):
        raise ValueError(f"unknown engine {data['engine']!r}")
    members = {}
    for name, member in data["members"].items():
        digest, size = member["sha256"], member["size"]
        if not (isinstance(name, str) and isinstance(digest, str) and len(digest) == 64
                and set(digest) <= _SHA256 and isinstance(size, int) and size >= 0):
            raise ValueError(f"member {name!r}")
        members[name] = Member(digest, size)
    tables = tuple(TablePart(str(t["name"]), int(t["rows"]), tuple(map(str, t["columns"])),
                             str(t["member"])) for t in data["tables"])
    files = tuple(str(path) for path in data["files"]["paths"])
    for path in files:
        if not is_plain_path(path):
            raise BackupError(f"the archive's file path {path!r} is not a plain path")
    for name in [t.member for t in tables if t.member] + [file_member(p) for p in files]:
        if name not in members:
            raise ValueError(f"{name} has no checksum")
    return Manifest(data["engine"], str(data["restsvcVersion"]), str(data["createdAt"]),
                    tuple({str(k): str(v) for k, v in item.items()}
                          for item in data["schemaHistory"]),
                    tables, members, files)


def verify(tar: tarfile.TarFile, manifest: Manifest) -> None:
    """Every member the manifest lists is in the archive once, a plain file
    whose bytes match its checksum, and there is nothing else."""
    seen: set[str] = set()
    for info in tar:
        if info.name == NAME:
            continue
        expected = manifest.members.get(info.name)
        if expected is None or info.name in seen or not info.isreg():
            raise BackupError(f"the archive holds {info.name!r}, which its manifest does not "
                              f"list (once, as a file)")
        seen.add(info.name)
        stream = tar.extractfile(info)
        assert stream is not None
        digest, size = hashlib.sha256(), 0
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
        if (digest.hexdigest(), size) != (expected.sha256, expected.size):
            raise BackupError(f"the archive's {info.name} does not match its checksum: the "
                              f"file is damaged or was changed")
    missing = sorted(set(manifest.members) - seen)
    if missing:
        raise BackupError(f"the archive lacks {', '.join(missing[:5])}"
                          f"{' and more' if len(missing) > 5 else ''}, which its manifest lists")
