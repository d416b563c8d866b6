"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them, and the
application's custom endpoints, into one Map."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule

from ..paths import DEFAULT_PATHS
from . import (apikeys, batch, changes, docs, entities, events, files, health, imports, messages,
               metadata, metrics, oauth, queries, reports, services, session, signin, webhooks)

if TYPE_CHECKING:
    from ..application import Application
    from ..settings import Settings

API_MODULES = (oauth, signin, entities, imports, changes, batch, queries, services, files,
               metadata, messages, session, apikeys, reports, events, webhooks, docs, health)


def all_rules(application: "Application", settings: "Settings | None" = None) -> list[Rule]:
    """The route table: built-in rules at the paths ``settings`` give them
    (``svc.rest.*-path``, the health checks'; their defaults without), then
    the application's endpoints."""
    paths = settings.paths if settings else DEFAULT_PATHS
    rules = [rule for module in API_MODULES if module is not health for rule in module.rules]
    if not paths.is_default:
        rules = [Rule(paths.mount(rule.rule), **rule.get_empty_kwargs()) for rule in rules]
    rules += health.routes(settings.health_live_path, settings.health_ready_path) \
        if settings else health.rules
    if settings and settings.metrics_path:
        rules += metrics.routes(settings.metrics_path)
    return rules + list(application.endpoints)
