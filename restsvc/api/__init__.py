"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them into one Map."""
from . import entities, messages, metadata, oauth, queries

API_MODULES = (oauth, entities, queries, metadata, messages)
