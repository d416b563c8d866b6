"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them, and the
application's custom endpoints, into one Map."""
from . import entities, files, messages, metadata, oauth, queries, services, session

API_MODULES = (oauth, entities, queries, services, files, metadata, messages, session)


def all_rules(application):
    """The route table: built-in rules, then the application's endpoints."""
    return [rule for module in API_MODULES for rule in module.rules] + list(application.endpoints)
