"""``restsvc new DIR``: a minimal application of one's own, served at once by
``restsvc --config DIR/restsvc.yaml serve``.

It writes DIR/restsvc.yaml (settings with a generated secret key and one API
client whose secret is printed once and stored only as a hash), DIR/<name>_app.py
(one entity, a resource role, the Application) and message bundles in English
and German. The module lives beside the settings file: ``svc.application``
finds it there (restsvc/application.py) and ``restsvc bundle`` carries it.
"""
import importlib.util
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from string import Template

from .privatefiles import create_private
from .security.clients import hash_secret

MODULE = Template('''\
"""$name: a restsvc application, started with `restsvc new`.

Serve it:            restsvc --config $config serve
After a model change: restsvc --config $config migrate --plan, then migrate
(README.md "First ten minutes", restsvc/docs/model.md "Changing the model").
"""
import peewee

from restsvc import Application, Entity, ResourceRole, entity


@entity(instance_name="title")
class Note(Entity):
    """The entity to start from; declare your own beside it and list them below.
    Every entity gets a UUID ``id`` and a ``version``."""
    title = peewee.CharField(max_length=200)
    text = peewee.TextField(null=True)
    done = peewee.BooleanField(default=False)


# What the API client in restsvc.yaml may do: everything with notes, nothing else.
NOTE_EDITOR = ResourceRole(
    "note-editor", "Notes: read and write",
    entities={"Note": "*"},
    attributes={"Note": {"*": "modify"}},
    specifics=("rest.enabled",),
    scope=("API",),
)

application = Application(
    entities=(Note,),
    resource_roles=(NOTE_EDITOR,),
    version="0.1.0",                  # GET /rest/version and the OpenAPI documents' version
)
''')

SETTINGS = Template('''\
# Settings of $name, made by `restsvc new` (restsvc/docs/configuration.md "Every setting").
# Keep this file private: it holds the secret key.
svc:
  application: $module:application    # the module beside this file
  data-dir: var/$short                # database and files, relative to the working directory
  secret-key: "$secret_key"
  core:
    available-locales: en, de         # the first is the default
    messages-dir: messages            # relative to this file
  rest:
    optimistic-locking-enabled: true  # a stale "version" is refused, not overwritten
    docs:
      title: $title          # the OpenAPI documents' title (a generated client is named after it)
  authserver:
    client:
      app:
        client-id: $client_id
        # Only the hash of the secret `restsvc new` printed; a new one: restsvc hash-secret
        client-secret: "$client_secret"
        authorization-grant-types: client_credentials
        access-token-time-to-live: 1h
        resource-roles: rest-minimal, note-editor
''')

MESSAGES = {
    "en": "Note: Note\nNote.id: ID\nNote.version: Version\nNote.title: Title\n"
          "Note.text: Text\nNote.done: Done\n",
    "de": "Note: Notiz\nNote.id: ID\nNote.version: Version\nNote.title: Titel\n"
          "Note.text: Text\nNote.done: Erledigt\n",
}


class StarterError(Exception):
    """The starter cannot be written; the message says why."""


@dataclass(frozen=True)
class Starter:
    directory: Path
    files: tuple[Path, ...]
    module: str
    client_id: str
    client_secret: str      # shown once; only its hash is written


def module_name(directory: str | Path) -> str:
    """``my-shop`` -> ``my_shop_app``: a Python identifier from the folder's name."""
    base = re.sub(r"\W+", "_", Path(directory).resolve().name.lower()).strip("_") or "my"
    return f"{'app_' if base[0].isdigit() else ''}{base}_app"


def create(directory: str | Path, module: str | None = None) -> Starter:
    folder = Path(directory)
    module = module or module_name(folder)
    if not module.isidentifier():
        raise StarterError(f"--module: {module!r} is not a Python module name")
    if importlib.util.find_spec(module) is not None:
        raise StarterError(f"a module {module!r} is already importable here; "
                           f"choose another name with --module")
    if folder.exists() and any(folder.iterdir()):
        raise StarterError(f"{folder} is not empty; give a new folder")
    name = folder.resolve().name
    short = module.removesuffix("_app").replace("_", "-")
    client_id = f"{short}-client"
    client_secret = secrets.token_urlsafe(24)
    config = folder / "restsvc.yaml"
    files = {
        config: SETTINGS.substitute(name=name, module=module, short=short, client_id=client_id,
                                    title=json.dumps(f"{name} API"),
                                    secret_key=secrets.token_urlsafe(32),
                                    client_secret=hash_secret(client_secret)),
        folder / f"{module}.py": MODULE.substitute(name=name, config=config),
        **{folder / "messages" / f"{lang}.yaml": text for lang, text in MESSAGES.items()},
    }
    (folder / "messages").mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        _write(path, text, private=path == config)
    return Starter(folder, tuple(files), module, client_id, client_secret)


def _write(path: Path, text: str, private: bool) -> None:
    fd = create_private(path) if private else os.open(
        path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
