"""One module per API area; each exports ``rules`` (werkzeug Rules whose
endpoint is the handler function). ``app.py`` assembles them into one Map."""
from . import files, messages, metadata, oauth

API_MODULES = (oauth, metadata, messages, files)
