"""gunicorn wsgi:app  --  settings from $RESTSVC_CONFIG, default config/restsvc.yaml."""
from restsvc import create_app

app = create_app()
