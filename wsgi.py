"""gunicorn wsgi:app inside the checkout; anywhere else: gunicorn restsvc.wsgi:app
(settings from $RESTSVC_CONFIG, default config/restsvc.yaml)."""
from restsvc.wsgi import app

__all__ = ["app"]
