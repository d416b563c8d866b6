"""File storages: where uploaded files live, by storage name.

``FileStorage`` is the interface the Files API talks to; ``LocalFileStorage``
keeps ``fs://`` files in a directory tree ``<yyyy>/<MM>/<dd>/<uuid>.<ext>``,
``files.objects.ObjectFileStorage`` keeps them in an S3-compatible bucket
under the same paths. Each is registered in ``FileStorages`` under its own
name, the scheme of its references; the handlers do not know which is which.

Rules that keep files from being lost or leaked:
- A file is written under a temporary name in ``<root>/.tmp`` (the same file
  system, so the final rename is atomic), fsynced, and renamed into place only
  when the whole content has arrived. A reference can therefore never point at
  a half-written file, and a failed write removes its temporary file.
- Temporary files a killed process left behind are swept at startup once they
  are older than a day. Their mtime moves with every write, so a slow upload
  that is still running in another instance sharing the directory is never
  taken for stale.
- Names are random UUIDs created with O_EXCL; there is no in-process state,
  so several service instances can share one directory.
- A path is accepted only as plain segments (no ``..``, no leading dot, no
  separators or escapes), and the resolved path must stay under the root, so
  neither a crafted reference nor a symlink reaches anything outside.
"""
import hashlib
import os
import re
import stat
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import BinaryIO, Protocol

from ..errors import ApiError, BadRequest, NotFound
from .refs import FileRef, invalid_ref, parse_file_ref

TEMP_DIR = ".tmp"
STALE_TEMP_SECONDS = 24 * 3600
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}\Z")
_EXTENSION = re.compile(r"[A-Za-z0-9]{1,16}\Z")


@dataclass(frozen=True)
class StoredFile:
    ref: FileRef
    size: int


class Readable(Protocol):
    """What ``FileStorage.open`` gives: the file's bytes by the reader's chunks."""

    def read(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


ByteRange = tuple[int, int]     # (start, stop): the bytes from start up to, not including, stop


@dataclass(frozen=True)
class FileInfo:
    size: int
    modified: float       # seconds since the epoch
    tag: str              # changes whenever the content may have changed (ETag)


class StorageUnavailable(ApiError):
    """The storage cannot be reached now; nothing was stored or read."""

    status = 503

    def __init__(self, storage_name: str, reason: str) -> None:
        super().__init__("File storage unavailable",
                         f"File storage '{storage_name}' cannot be reached: {reason}",
                         headers={"Retry-After": "5"})
        self.reason = reason


def file_not_found(text: str) -> NotFound:
    return NotFound("File not found", f"File not found. File reference: {text}")


def extension(file_name: str) -> str:
    """The part after the last dot when it is a plain extension, else ""."""
    _, dot, ext = file_name.rpartition(".")
    return ext if dot and _EXTENSION.match(ext) else ""


def new_path(file_name: str) -> str:
    """``<yyyy>/<MM>/<dd>/<uuid>[.<ext>]`` for a new file: unique without any shared state."""
    ext = extension(file_name)
    return (datetime.now(timezone.utc).strftime("%Y/%m/%d/") + str(uuid.uuid4())
            + (f".{ext}" if ext else ""))


def is_plain_path(path: str) -> bool:
    """Only plain segments: no ``..``, no leading dot, no separators or escapes."""
    return all(_SEGMENT.match(part) for part in path.split("/"))


class FileStorage(ABC):
    """One named storage. Paths are the part of a reference between ``://`` and ``?``."""

    name: str

    @abstractmethod
    def write(self, chunks: Iterable[bytes], file_name: str) -> StoredFile:
        """Store an iterable of bytes as a new file; return a StoredFile.
        If iterating ``chunks`` raises, nothing is stored and the error propagates."""

    @abstractmethod
    def accepts(self, ref: FileRef) -> bool:
        """Whether the reference's path is one this storage could have written."""

    @abstractmethod
    def stat(self, ref: FileRef) -> FileInfo:
        """FileInfo of an accepted reference; FileNotFoundError when there is no such file."""

    @abstractmethod
    def open(self, ref: FileRef, byte_range: ByteRange | None = None) -> Readable:
        """A binary object with ``read(size)`` and ``close()`` giving the file's
        bytes, or only those from ``start`` to ``stop`` for ``byte_range=(start,
        stop)``; FileNotFoundError when there is no such file."""

    @abstractmethod
    def delete(self, ref: FileRef) -> bool:
        """Remove the file; return whether there was one."""

    @abstractmethod
    def check(self) -> None:
        """Raise StorageUnavailable unless the storage can be used now. Cheap:
        the readiness check calls it."""


class LocalFileStorage(FileStorage):
    def __init__(self, root: str, name: str = "fs") -> None:
        self.name = name
        self.root = os.path.abspath(root)
        self.temp_dir = os.path.join(self.root, TEMP_DIR)
        os.makedirs(self.temp_dir, exist_ok=True)
        self._real_root = os.path.realpath(self.root)
        self.sweep_temp_files()

    def write(self, chunks: Iterable[bytes], file_name: str) -> StoredFile:
        path = new_path(file_name)
        relative_dir, _, stored_name = path.rpartition("/")
        fd, temp_path = tempfile.mkstemp(prefix="upload-", suffix=".part", dir=self.temp_dir)
        try:
            size = 0
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
                    size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            directory = os.path.join(self.root, relative_dir)
            os.makedirs(directory, exist_ok=True)
            os.rename(temp_path, os.path.join(directory, stored_name))
        except BaseException:
            # Also on GeneratorExit/SystemExit: a worker stopped mid-upload leaves nothing.
            _remove_quietly(temp_path)
            raise
        _fsync_directory(directory)
        return StoredFile(FileRef(self.name, path, file_name), size)

    def accepts(self, ref: FileRef) -> bool:
        return ref.storage == self.name and is_plain_path(ref.path)

    def _existing_path(self, ref: FileRef) -> str:
        path = os.path.realpath(os.path.join(self.root, *ref.path.split("/")))
        # A symlink leading outside the root is treated as no file at all.
        if not path.startswith(self._real_root + os.sep):
            raise FileNotFoundError(ref.path)
        return path

    def stat(self, ref: FileRef) -> FileInfo:
        try:
            st = os.stat(self._existing_path(ref))
        except NotADirectoryError:
            raise FileNotFoundError(ref.path) from None
        if not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError(ref.path)
        # The same on every instance sharing the directory: no process-local input.
        tag = hashlib.sha256(f"{ref.path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
        return FileInfo(st.st_size, st.st_mtime, tag[:32])

    def open(self, ref: FileRef, byte_range: ByteRange | None = None) -> Readable:
        try:
            file = open(self._existing_path(ref), "rb")
        except (IsADirectoryError, NotADirectoryError):
            raise FileNotFoundError(ref.path) from None
        # The whole file is the file object itself: gunicorn sends it with sendfile.
        return file if byte_range is None else _Slice(file, *byte_range)

    def delete(self, ref: FileRef) -> bool:
        try:
            os.unlink(self._existing_path(ref))
            return True
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False

    def check(self) -> None:
        if not os.access(self.temp_dir, os.W_OK | os.X_OK):
            raise StorageUnavailable(self.name, "its directory is not writable")

    def sweep_temp_files(self, older_than: float = STALE_TEMP_SECONDS) -> int:
        """Remove temporary files no write has touched for ``older_than`` seconds."""
        cutoff = time.time() - older_than
        removed = 0
        with os.scandir(self.temp_dir) as entries:
            for entry in entries:
                try:
                    if (entry.is_file(follow_symlinks=False)
                            and entry.stat(follow_symlinks=False).st_mtime < cutoff):
                        os.unlink(entry.path)
                        removed += 1
                except FileNotFoundError:
                    pass      # another instance swept it first
        return removed


class _Slice:
    """The bytes of ``file`` from ``start`` to ``stop``, read by the caller's chunks."""

    def __init__(self, file: BinaryIO, start: int, stop: int) -> None:
        file.seek(start)
        self.file = file
        self.remaining = stop - start

    def read(self, size: int | None = -1, /) -> bytes:
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        chunk = self.file.read(size) if size else b""
        self.remaining -= len(chunk)
        return chunk

    def close(self) -> None:
        self.file.close()


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable; not every platform can open a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class FileStorages:
    """The configured storages by name; uploads go to the default one."""

    def __init__(self, storages: Iterable[FileStorage], default: str) -> None:
        self._storages = {storage.name: storage for storage in storages}
        self.default = self._storages[default]

    def __iter__(self) -> Iterator[FileStorage]:
        return iter(self._storages.values())

    def get(self, name: str) -> FileStorage:
        storage = self._storages.get(name)
        if storage is None:
            raise BadRequest("Invalid file reference", f"Cannot find FileStorage with name: '{name}'")
        return storage

    def locate(self, text: str) -> tuple[FileStorage, FileRef, FileInfo]:
        """(storage, ref, FileInfo) of an existing file; 400 or 404 naming ``text`` as given."""
        ref = parse_file_ref(text)
        storage = self.get(ref.storage)
        if not storage.accepts(ref):
            raise invalid_ref(text)
        try:
            return storage, ref, storage.stat(ref)
        except FileNotFoundError:
            raise file_not_found(text) from None
