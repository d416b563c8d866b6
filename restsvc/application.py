"""What an application declares, and how the settings name it."""
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING

from .settings import SettingsError

if TYPE_CHECKING:
    import peewee
    from werkzeug.routing import Rule

    from .model.entity import Entity
    from .security.roles import ResourceRole, RowLevelRole


@dataclass(frozen=True)
class Application:
    """An application's declarations, handed to ``create_app``.

    entities         Peewee models declared with @entity
    enums            extra enums (enums used by entity fields are found by themselves)
    resource_roles   ResourceRole declarations (beside the predefined ones)
    row_level_roles  RowLevelRole declarations
    load_demo_data   optional callable that fills an empty database with sample data
    services         service objects (or classes made without arguments): those marked
                     @rest_service expose their @rest_method methods; any of them can
                     be exposed by name in the services file (svc.rest.services-config)
    endpoints        werkzeug Rules of custom endpoints; each endpoint is a handler
                     ``handler(ctx, **url_values) -> Response`` (see restsvc.web.Context)
    version          the application's version, as GET /rest/version shows it (None: not given)
    """
    entities: Sequence[type["Entity"]]
    enums: Sequence[type[Enum]] = ()
    resource_roles: Sequence["ResourceRole"] = ()
    row_level_roles: Sequence["RowLevelRole"] = ()
    load_demo_data: Callable[["peewee.Database"], object] | None = None
    services: Sequence[object] = ()
    endpoints: Sequence["Rule"] = ()
    version: str | None = None


def import_application(reference: str, search_dir: object = None) -> Application:
    """``package.module:attribute`` -> the Application object. A module that is
    not installed is also looked for in ``search_dir`` (the settings file's folder)."""
    module_name, _, attribute = reference.partition(":")
    try:
        module = _import(module_name, search_dir)
        application = getattr(module, attribute or "application")
    except (ImportError, AttributeError) as exc:
        raise SettingsError(f"svc.application: cannot load {reference!r}: {exc}") from None
    if not isinstance(application, Application):
        raise SettingsError(f"svc.application: {reference!r} is not a restsvc Application")
    return application


def _import(module_name: str, search_dir: object) -> ModuleType:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        top = module_name.partition(".")[0]
        if search_dir is None or exc.name != top or str(search_dir) in sys.path:
            raise
    sys.path.append(str(search_dir))
    return importlib.import_module(module_name)
