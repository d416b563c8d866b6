"""What an application declares, and how the settings name it."""
import importlib
from dataclasses import dataclass

from .settings import SettingsError


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
    """
    entities: tuple
    enums: tuple = ()
    resource_roles: tuple = ()
    row_level_roles: tuple = ()
    load_demo_data: object = None
    services: tuple = ()
    endpoints: tuple = ()


def import_application(reference):
    """``package.module:attribute`` -> the Application object."""
    module_name, _, attribute = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
        application = getattr(module, attribute or "application")
    except (ImportError, AttributeError) as exc:
        raise SettingsError(f"svc.application: cannot load {reference!r}: {exc}") from None
    if not isinstance(application, Application):
        raise SettingsError(f"svc.application: {reference!r} is not a restsvc Application")
    return application
