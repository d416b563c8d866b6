"""The local file storage (``fs://`` references): its finished files go into
the archive as ``files/<path>`` (temporary uploads under ``.tmp`` do not; an
object storage's bucket is not part of a backup). A restore writes them into
a staging folder under the storage's ``.tmp`` (the same file system) and
moves them into place only once the database is restored, so a refused or
failed restore leaves the storage as it was."""
from __future__ import annotations

import os
import shutil
import stat
import tarfile
import uuid

from ..files.storage import TEMP_DIR, is_plain_path
from ..privatefiles import create_private
from .archive import ArchiveWriter, BackupError, copy_verified
from .manifest import Manifest, file_member


def stored_paths(root: str) -> list[str]:
    """The finished files under ``root``: paths as in references, sorted."""
    found = []
    for directory, dirs, names in os.walk(root):
        if directory == root:
            dirs[:] = [d for d in dirs if d != TEMP_DIR]
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if is_plain_path(relative) and stat.S_ISREG(os.lstat(path).st_mode):
                found.append(relative)
    return found


def is_empty(root: str) -> bool:
    return not os.path.isdir(root) or not stored_paths(root)


def add_files(writer: ArchiveWriter, root: str) -> tuple[str, ...]:
    """Adds each file; one deleted meanwhile is left out (its reference went with it)."""
    added = []
    for path in stored_paths(root):
        try:
            writer.add_path(file_member(path), os.path.join(root, path))
        except FileNotFoundError:
            continue
        added.append(path)
    return tuple(added)


def stage(tar: tarfile.TarFile, manifest: Manifest, root: str) -> str:
    """The archive's files, verified, in a new staging folder under ``root``; its path."""
    staging = os.path.join(root, TEMP_DIR, f"restore-{uuid.uuid4().hex}")
    os.makedirs(staging, mode=0o700)
    try:
        for path in manifest.files:      # plain paths: manifest.read checked them
            member = file_member(path)
            source = tar.extractfile(member)
            if source is None:
                raise BackupError(f"the archive lacks {member}")
            target_path = os.path.join(staging, path)
            os.makedirs(os.path.dirname(target_path), exist_ok=True)
            fd = create_private(target_path)
            with os.fdopen(fd, "wb") as target:
                copy_verified(member, source, manifest.members[member], target)
                target.flush()
                os.fsync(target.fileno())
    except BaseException:
        discard(staging)
        raise
    return staging


def publish(staging: str, root: str, paths: tuple[str, ...]) -> None:
    """Moves the staged files to their places under ``root``."""
    for path in paths:
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.rename(os.path.join(staging, path), target)
    discard(staging)


def discard(staging: str) -> None:
    shutil.rmtree(staging, ignore_errors=True)
