"""restsvc: an application's data and business logic over HTTP/JSON."""
from .application import Application
from .model.entity import Entity, entity
from .model.fields import DateTimeField, EnumField, FileRefField, transient
from .security.roles import ResourceRole, RowLevelRole


def create_app(settings=None, application=None):
    """The WSGI application. ``settings`` defaults to ``$RESTSVC_CONFIG`` or
    ``config/restsvc.yaml``; ``application`` to the one the settings name."""
    from .app import RestApp
    from .settings import load_settings
    return RestApp(settings or load_settings(), application)


__all__ = ["Application", "DateTimeField", "Entity", "EnumField", "FileRefField",
           "ResourceRole", "RowLevelRole", "create_app", "entity", "transient"]
