"""The ``__main__.py`` of a bundle made by ``restsvc bundle`` (standard library only).

``python FILE <command> ...`` lands here. The first run on a machine unpacks
the bundle's payload into a cache folder named after the bundle's content
hash (``$RESTSVC_BUNDLE_CACHE``, else ``$XDG_CACHE_HOME/restsvc`` or
``~/.cache/restsvc``; owner-only, since the settings in it hold secrets);
later runs of the same bundle reuse it. Code then runs from plain files,
exactly as from an installation: package data, C extensions and the
configuration need no zip awareness. The bundled settings are the default
``--config``; ``--config`` or ``$RESTSVC_CONFIG`` still choose another file.
"""
import json
import os
import shutil
import sys
import tempfile
import zipfile
from typing import Any, NoReturn

MANIFEST = "restsvc-bundle.json"
PAYLOAD = ("lib/", "native/", "config/")
# What restsvc/bundle.py writes into MANIFEST (its ``Manifest``); read here
# without importing it: this file runs before restsvc is importable.
Manifest = dict[str, Any]


def cache_root() -> str:
    configured = os.environ.get("RESTSVC_BUNDLE_CACHE")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "restsvc")


def unpack(archive: str, manifest: Manifest) -> str:
    """The folder holding this bundle's payload; unpacked once, atomically."""
    root = cache_root()
    target = os.path.join(root, "bundle-" + manifest["id"])
    if os.path.isdir(target):
        _check_private(target)
        return target
    os.makedirs(root, mode=0o700, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=".unpacking-", dir=root)      # mode 0700
    try:
        with zipfile.ZipFile(archive) as bundle:
            for name in bundle.namelist():
                if name.startswith(PAYLOAD):
                    bundle.extract(name, partial)
        os.rename(partial, target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not os.path.isdir(target):       # not merely another process that was faster
            raise
        _check_private(target)
    return target


def _check_private(folder: str) -> None:
    """Code is run from the folder: only if nobody else could have put it there."""
    status = os.stat(folder)
    if status.st_uid != os.getuid() or status.st_mode & 0o022:
        raise OSError(f"{folder} is not this user's own (or others may write to it)")


def main() -> NoReturn:
    archive = os.path.dirname(os.path.abspath(__file__))
    with zipfile.ZipFile(archive) as bundle:
        manifest: Manifest = json.loads(bundle.read(MANIFEST))
    if sys.version_info < tuple(manifest["python"]):
        sys.exit(f"restsvc bundle: needs Python {'.'.join(map(str, manifest['python']))} "
                 f"or newer, this is {sys.version.split()[0]}")
    try:
        home = unpack(archive, manifest)
    except OSError as exc:
        sys.exit(f"restsvc bundle: cannot unpack into {cache_root()} ({exc}); "
                 f"set RESTSVC_BUNDLE_CACHE to a writable folder")
    # The bundle's own packages come first; database drivers (C extensions
    # built for one interpreter) last, so a driver installed beside the
    # interpreter wins over the bundled one.
    sys.path[:] = [os.path.join(home, "lib")] + [
        entry for entry in sys.path if os.path.abspath(entry) != archive]
    sys.path.append(os.path.join(home, "native"))
    os.environ.setdefault("RESTSVC_CONFIG", os.path.join(home, "config", manifest["config"]))
    from restsvc.cli import main as cli_main
    sys.exit(cli_main())


if __name__ == "__main__":
    main()
