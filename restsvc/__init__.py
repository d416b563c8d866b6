"""restsvc: an application's data and business logic over HTTP/JSON.

What an application imports comes from here and nowhere else:
declarations (``Application``, ``Entity``, ``entity``, fields, roles), the
errors it may raise (they answer with their status and message), what its
services, endpoints and query functions are given (``DataAccess``,
``Caller``, ``Context``, ``Access``), and the helpers its query functions and
demo data need. All of it is typed (``py.typed``).
"""
from typing import TYPE_CHECKING

from .application import Application
from .data.access import Access
from .data.bound import DataAccess, Record, to_entity_json
from .data.read.queries import invalid_parameter
from .errors import ApiError, BadRequest, Conflict, Forbidden, Invalid, NotFound
from .model.datatypes import FileRef
from .model.entity import Entity, entity
from .model.fields import DateTimeField, Embedded, EnumField, FileRefField, embeddable, transient
from .security.clients import hash_secret
from .security.roles import ResourceRole, RowLevelRole
from .security.tenants import Tenant
from .security.users import User
from .services.declare import Caller, rest_method, rest_service
from .web import Context

if TYPE_CHECKING:
    from .app import RestApp
    from .settings import Settings


def create_app(settings: "Settings | None" = None,
               application: Application | None = None) -> "RestApp":
    """The WSGI application. ``settings`` defaults to ``$RESTSVC_CONFIG`` or
    ``config/restsvc.yaml``; ``application`` to the one the settings name."""
    from .app import RestApp
    from .settings import load_settings
    return RestApp(settings or load_settings(), application)


__all__ = ["Access", "ApiError", "Application", "BadRequest", "Caller", "Conflict", "Context",
           "DataAccess", "DateTimeField", "Embedded", "Entity", "EnumField", "FileRef", "FileRefField",
           "Forbidden", "Invalid", "NotFound", "Record", "ResourceRole", "RowLevelRole", "Tenant", "User",
           "create_app",
           "embeddable", "entity", "hash_secret", "invalid_parameter", "rest_method", "rest_service",
           "to_entity_json", "transient"]
