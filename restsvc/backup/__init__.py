"""``restsvc backup`` and ``restsvc restore``: one archive file holding the
database, the local (``fs://``) file storage and a manifest.

    archive.py    the tar file: written owner-only under a temporary name, members hashed
    manifest.py   what the archive holds, with the checksums a restore verifies first
    sqlite.py     SQLite: the backup API's consistent copy while the service writes
    postgres.py   PostgreSQL: every table COPYed out in one REPEATABLE READ snapshot
    files.py      the local file storage: its files out, and back through a staging folder
    command.py    the two commands: what is taken, in which order, what is printed
"""
from .archive import BackupError

__all__ = ["BackupError"]
