"""What every ``restsvc`` command shares: its error and the application of
its settings."""
import argparse
from typing import TYPE_CHECKING

from .settings import load_settings

if TYPE_CHECKING:
    from .app import RestApp
    from .data.access import Access


class CommandError(Exception):
    """A command that cannot do what was asked; the message says why."""


def app_of(args: argparse.Namespace, init_schema: bool | None = None, check_schema: bool = True,
           announce: bool = False) -> "RestApp":
    """The app of the settings; only ``serve`` logs the start-up summary."""
    from .app import RestApp
    settings = load_settings(args.config)
    if init_schema is not None:
        from dataclasses import replace
        settings = replace(settings, init_schema=init_schema)
    return RestApp(settings, check_schema=check_schema, announce=announce)


def service_access(app: "RestApp", roles: list[str] | None) -> "Access":
    """The service itself reading or writing with ``roles`` (default:
    system-full-access), as imports and exports from the command line do."""
    from .data.access import NO_USER_ID, SERVICE_NAME, Access
    codes = roles or ["system-full-access"]
    resource, row_level = app.roles.split(codes)
    unknown = set(codes) - set(resource) - set(row_level)
    if unknown:
        raise CommandError(f"unknown role {', '.join(sorted(unknown))}")
    return Access(app.metadata, app.roles.permissions(resource, row_level),
                  {"username": SERVICE_NAME, "userId": NO_USER_ID}, app.database,
                  app.data.sql_cache, default_tenant=app.settings.default_tenant or None)
