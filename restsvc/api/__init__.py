"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them into one Map."""
from . import entities, files, health, messages, metadata, oauth, queries, session

API_MODULES = (oauth, entities, queries, files, metadata, messages, session, health)


def url_rules(settings):
    """Every module's rules, the health checks at the paths the settings name."""
    for module in API_MODULES:
        if module is health:
            yield from health.routes(settings.health_live_path, settings.health_ready_path)
        else:
            yield from (rule.empty() for rule in module.rules)
