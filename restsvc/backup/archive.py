"""The backup archive: a tar file (gzip-compressed when its name ends in
``.gz`` or ``.tgz``), written owner-only (0600) under a temporary name in the
target's folder and linked to its name only when complete, so a reader never
sees half an archive and an existing file is never overwritten. Every member
is hashed (SHA-256) as it is written; the manifest, written last, lists them.
"""
from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from ..privatefiles import create_private

CHUNK = 1 << 20


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why."""


@dataclass(frozen=True)
class Member:
    sha256: str
    size: int


def is_compressed(path: str) -> bool:
    return path.endswith((".gz", ".tgz"))


class _HashingReader:
    """A file's bytes as tarfile reads them, hashed on the way."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source, self.digest, self.size = source, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


class ArchiveWriter:
    """Members added one by one; ``members`` maps each name to its checksum."""

    def __init__(self, stream: IO[bytes], compressed: bool) -> None:
        # Level 1: most of gzip's gain at a fraction of its CPU (the service runs beside it).
        self.tar = (tarfile.open(fileobj=stream, mode="w:gz", compresslevel=1,
                                 format=tarfile.PAX_FORMAT) if compressed else
                    tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT))
        self.members: dict[str, Member] = {}

    def add_file(self, name: str, source: IO[bytes], size: int, mtime: float | None = None) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = size, 0o600, int(mtime or time.time())
        reader = _HashingReader(source)
        self.tar.addfile(info, reader)
        if reader.size != size:
            raise BackupError(f"{name} changed while it was read ({size} bytes expected, "
                              f"{reader.size} read)")
        self.members[name] = Member(reader.digest.hexdigest(), size)

    def add_path(self, name: str, path: str) -> None:
        with open(path, "rb") as source:
            stat = os.fstat(source.fileno())
            self.add_file(name, source, stat.st_size, stat.st_mtime)

    def add_bytes(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
        self.tar.addfile(info, io.BytesIO(data))

    def close(self) -> None:
        self.tar.close()


@contextmanager
def private_output(path: str) -> Iterator[IO[bytes]]:
    """A new file at ``path``, mode 0600, that exists under its name only once
    the block has finished without an error."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.lexists(path):
        raise BackupError(f"{path} exists already; choose another name (a backup never "
                          f"overwrites a file)")
    if not os.path.isdir(directory):
        raise BackupError(f"the folder {directory} does not exist")
    temp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.partial")
    fd = create_private(temp)
    try:
        with os.fdopen(fd, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        _publish(temp, path)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def _publish(temp: str, path: str) -> None:
    try:
        os.link(temp, path)     # fails rather than replace a file made meanwhile
    except FileExistsError:
        raise BackupError(f"{path} was created by someone else meanwhile; "
                          f"nothing was written") from None
    except OSError:             # a file system without hard links
        if os.path.lexists(path):
            raise BackupError(f"{path} exists already; nothing was written") from None
        os.rename(temp, path)


def private_temp_file(directory: str, prefix: str) -> tuple[int, str]:
    """(fd, path) of a new owner-only file in ``directory``."""
    path = os.path.join(directory, f"{prefix}{uuid.uuid4().hex}")
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600), path


class VerifiedReader:
    """A member's bytes, checked against its checksum when read to the end."""

    def __init__(self, name: str, source: IO[bytes], expected: Member) -> None:
        self.name, self.expected = name, expected
        self.reader = _HashingReader(source)

    def read(self, size: int = -1) -> bytes:
        data = self.reader.read(size)
        if not data:
            self.check()
        return data

    def readline(self, size: int = -1) -> bytes:    # psycopg2's copy_expert may ask for lines
        return self.read(size if size > 0 else CHUNK)

    def check(self) -> None:
        if (self.reader.digest.hexdigest(), self.reader.size) != (self.expected.sha256,
                                                                   self.expected.size):
            raise BackupError(f"the archive's {self.name} does not match its checksum")


def copy_verified(name: str, source: IO[bytes], expected: Member, target: IO[bytes]) -> None:
    reader = VerifiedReader(name, source, expected)
    while True:
        data = reader.read(CHUNK)
        if not data:
            return
        target.write(data)
