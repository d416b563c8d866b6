"""``restsvc bundle --output FILE``: the application, its settings and its
dependencies in one file that runs with nothing but Python installed:
``python FILE serve`` (or ``migrate``, ``user``, any other command).

The file is a standard zipapp (PEP 441: a ``#!`` line, then a zip whose
``__main__.py`` is ``restsvc/bundle_boot.py``). Inside it:

- ``lib/``: restsvc itself, the application's module or package (when it is
  not part of restsvc) and the installed distributions of every dependency of
  both, copied from this environment with their metadata;
- ``native/``: the PostgreSQL driver when it is installed here (the
  ``postgres`` extra). It is a C extension, so it loads only on the same
  Python version and platform; elsewhere psycopg2 installed beside the
  interpreter is used (the bundle puts ``native/`` last on ``sys.path``);
- ``config/``: the settings file and the files it names (messages, queries,
  services, reports, sign-in template), in the same layout, so relative paths
  in the settings resolve inside the bundle.

Optional C speed-ups (PyYAML's, MarkupSafe's) travel along: Python loads them
where they fit and the pure-Python fallbacks everywhere else.
"""
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import Distribution
from pathlib import Path
from typing import TypedDict

from .application import import_application
from .settings import Settings, SettingsError, config_path, load_settings

# The bundle's manifest (bundle_boot.py reads it when the bundle starts).
Manifest = TypedDict("Manifest", {"id": str, "config": str, "python": list[int],
                                  "drivers": list[str], "built-for": str})

Entries = dict[str, Path | bytes]        # name in the bundle -> file to copy, or its bytes

BOOT = Path(__file__).with_name("bundle_boot.py")
MANIFEST = "restsvc-bundle.json"
MINIMUM_PYTHON = (3, 11)
DRIVERS = ("psycopg2-binary", "psycopg2")       # C extensions for one interpreter: native/
DRIVER_EXTRAS = ("postgres",)                    # restsvc extras bundled when installed
CONFIG_FILES = (("svc.core.messages-dir", "messages_dir"),
                ("svc.rest.queries-config", "queries_config"),
                ("svc.rest.services-config", "services_config"),
                ("svc.reports.dir", "reports_dir"),
                ("svc.authserver.signin-template", "signin_template"))
_REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)       # fixed: the same inputs make the same file


class BundleError(Exception):
    """The bundle cannot be built from this environment; the message says why."""


@dataclass(frozen=True)
class Summary:
    output: Path
    files: int
    size: int
    distributions: tuple[str, ...]
    drivers: tuple[str, ...]
    built_for: str


def build(output: str | Path, config: str | Path | None = None,
          extras: Iterable[str] = ()) -> Summary:
    """Write the bundle to ``output``; the settings are checked first. ``extras``
    names restsvc extras (``docs``, ``jwt``, ...) whose distributions go along;
    the PostgreSQL driver (``postgres``) does whenever it is installed."""
    settings = load_settings(config)
    import_application(settings.application, settings.base_dir)
    config_file = config_path(config)
    entries: Entries = {f"config/{config_file.name}": config_file, **_config_entries(settings),
               **_restsvc_entries()}
    requirements = _requirements("restsvc", extras=DRIVER_EXTRAS)
    for extra in extras:
        named = _requirements("restsvc", extras=(extra,), only_extras=True, installed_only=False)
        if not named:
            raise BundleError(f"--extra {extra}: restsvc has no such extra")
        requirements += named
    top = settings.application.partition(":")[0].partition(".")[0]
    if top != "restsvc":
        entries.update(_module_entries(top))
        for owner in importlib.metadata.packages_distributions().get(top, ()):
            requirements += _requirements(owner)
    distributions = _closure(requirements)
    for distribution in distributions:
        entries.update(_distribution_entries(distribution))
    payload = {name: _read(source) for name, source in sorted(entries.items())}
    names = tuple(f"{d.metadata['Name']} {d.version}" for d in distributions)
    drivers = tuple(name for name, d in zip(names, distributions)
                    if _key(d.metadata["Name"]) in DRIVERS)
    built_for = f"{platform.python_implementation()} {sys.version_info[0]}.{sys.version_info[1]} " \
                f"on {sys.platform}-{platform.machine()}"
    manifest: Manifest = {"id": _content_id(payload), "config": config_file.name,
                "python": list(MINIMUM_PYTHON), "drivers": list(drivers), "built-for": built_for}
    target = Path(output)
    _write(target, manifest, payload)
    return Summary(target, len(payload), target.stat().st_size, names, drivers, built_for)


def _content_id(payload: dict[str, bytes]) -> str:
    """Names the cache folder: the same content, the same folder."""
    digest = hashlib.sha256()
    for name, data in payload.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:20]


def _write(output: Path, manifest: Manifest, payload: dict[str, bytes]) -> None:
    """The zipapp, owner-only from its first byte (the settings in it hold the
    secret key and client secrets), put in place whole."""
    partial = output.with_name(output.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(b"#!/usr/bin/env python3\n")
            with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as bundle:
                for name, data in [("__main__.py", BOOT.read_bytes()),
                                   (MANIFEST, json.dumps(manifest, indent=1).encode()),
                                   *payload.items()]:
                    bundle.writestr(zipfile.ZipInfo(name, _ZIP_TIME), data,
                                    compress_type=zipfile.ZIP_DEFLATED)
        os.chmod(partial, 0o700)        # also when an earlier .partial was there
        os.replace(partial, output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _restsvc_entries() -> Entries:
    """restsvc's package, and its metadata: its version and requirements."""
    own = importlib.metadata.distribution("restsvc")
    return {**_package_entries(Path(__file__).parent, "lib/restsvc"),
            f"lib/restsvc-{own.version}.dist-info/METADATA": "".join(
                [f"Metadata-Version: 2.1\nName: restsvc\nVersion: {own.version}\n"]
                + [f"Requires-Dist: {requirement}\n" for requirement in own.requires or ()]
            ).encode()}


def _config_entries(settings: Settings) -> Entries:
    """The files the settings name, under config/ in their layout beside the settings file."""
    entries: Entries = {}
    for key, attribute in CONFIG_FILES:
        value = getattr(settings, attribute)
        if not value:
            continue
        path = settings.path(value)
        try:
            relative = path.relative_to(settings.base_dir)
        except ValueError:
            raise SettingsError(f"{key}: {path} is outside {settings.base_dir}, the folder of "
                                f"the settings file; a bundle carries only files under it") from None
        if path.is_dir():
            entries.update(_package_entries(path, f"config/{relative.as_posix()}"))
        elif path.is_file():
            entries[f"config/{relative.as_posix()}"] = path
    return entries


def _package_entries(directory: str | Path, prefix: str) -> Entries:
    """A folder's files, without caches and hidden files."""
    entries: Entries = {}
    for path in sorted(Path(directory).rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") or part == "__pycache__"
                                      for part in relative.parts) and path.suffix != ".pyc":
            entries[f"{prefix}/{relative.as_posix()}"] = path
    return entries


def _module_entries(top: str) -> Entries:
    """The application's own top-level module or package (already imported)."""
    spec = sys.modules[top].__spec__
    assert spec is not None         # an imported module's, not __main__'s
    if spec.submodule_search_locations:
        entries: Entries = {}
        for location in spec.submodule_search_locations:
            entries.update(_package_entries(location, f"lib/{top}"))
        return entries
    origin = Path(str(spec.origin))
    return {f"lib/{origin.name}": origin}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(distribution: str, extras: Iterable[str] = (), only_extras: bool = False,
                  installed_only: bool = True) -> list[str]:
    """Names a distribution requires: unconditionally (unless ``only_extras``),
    or by one of ``extras`` (when installed here, with ``installed_only``)."""
    names: list[str] = []
    for requirement in importlib.metadata.requires(distribution) or ():
        match = _REQUIREMENT_NAME.match(requirement)
        assert match is not None        # a requirement starts with its distribution's name
        name = match.group()
        marker = requirement.partition(";")[2]
        extra = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", marker)
        if only_extras and not extra:
            continue
        if extra and (extra.group(1) not in extras or installed_only and not _installed(name)):
            continue
        if marker and not extra and not _installed(name):
            continue        # a condition (Python version, platform) this environment does not meet
        names.append(name)
    return names


def _installed(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _closure(names: Iterable[str]) -> tuple[Distribution, ...]:
    """The installed distributions of ``names`` and of everything they require."""
    found: dict[str, Distribution] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        if _key(name) in found:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise BundleError(f"the dependency {name} is not installed here") from None
        found[_key(name)] = distribution
        pending.extend(_requirements(name))
    return tuple(found[key] for key in sorted(found))


def _distribution_entries(distribution: Distribution) -> Entries:
    if distribution.files is None:
        raise BundleError(f"{distribution.metadata['Name']} lists no files "
                            f"(no RECORD); reinstall it with pip")
    prefix = "native" if _key(distribution.metadata["Name"]) in DRIVERS else "lib"
    entries: Entries = {}
    for file in distribution.files:
        if ".." in file.parts or "__pycache__" in file.parts or file.suffix == ".pyc":
            continue        # scripts outside site-packages, byte code
        entries[f"{prefix}/{file.as_posix()}"] = Path(str(distribution.locate_file(file)))
    return entries


def _read(source: Path | bytes) -> bytes:
    return source if isinstance(source, bytes) else source.read_bytes()
