"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them into one Map."""
from . import docs, entities, files, messages, metadata, oauth, queries, session

API_MODULES = (oauth, entities, queries, files, metadata, messages, session, docs)
