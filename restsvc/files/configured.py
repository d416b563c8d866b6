"""The storages a deployment configures: the local ``fs`` one and the object
storages of the settings (objects.py, imported only when one is configured:
it loads boto3)."""
from typing import TYPE_CHECKING

from ..errors import SettingsError
from .storage import FileStorage, FileStorages, LocalFileStorage

if TYPE_CHECKING:
    from ..settings import Settings


def file_storages(settings: "Settings") -> FileStorages:
    """The storages of a deployment: local ``fs`` under ``svc.file-storage.dir``
    and the object storages under ``svc.file-storage.<name>``."""
    try:
        local = LocalFileStorage(settings.file_storage_dir)
    except OSError as exc:
        raise SettingsError(f"svc.file-storage.dir: cannot use {settings.file_storage_dir!r}: "
                            f"{exc.strerror}") from None
    storages: list[FileStorage] = [local]
    if settings.object_storages:
        from .objects import ObjectFileStorage
        storages += [ObjectFileStorage(config, settings.max_file_size)
                     for config in settings.object_storages]
    return FileStorages(storages, default=settings.default_file_storage)
