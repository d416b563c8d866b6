"""Files restsvc creates that hold secrets (the SQLite database with its
password and token hashes, its backups, generated settings with a secret key):
made readable by their owner alone (0600) from the first byte, never widened
afterwards by a chmod. SQLite gives its -wal, -shm and -journal files the
database file's mode, so they follow."""
import os

PRIVATE = 0o600


def create_private(path: str | os.PathLike[str]) -> int:
    """A new file at ``path``, open for writing, mode 0600 (the umask can only
    narrow it); FileExistsError when there is one already."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)


def ensure_private(path: str | os.PathLike[str]) -> bool:
    """An empty file at ``path`` with mode 0600 unless a file is there
    already (which is left as it is); whether one was made."""
    try:
        os.close(create_private(path))
    except FileExistsError:
        return False
    return True
