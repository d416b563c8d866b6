"""The demo deployment's WSGI entry point, for a checkout of this repository.

Settings come from $RESTSVC_CONFIG, default config/restsvc.yaml. Serve with
``restsvc serve``, or under a gunicorn of your own with restsvc's settings:

    gunicorn -c python:restsvc.gunicorn_config restsvc.wsgi:app

(``restsvc.wsgi`` works wherever restsvc is installed; this module is the same
app.) A plain ``gunicorn wsgi:app`` runs gunicorn's defaults, under which every
change-feed stream is cut at 30 s with ``WORKER TIMEOUT`` (restsvc/docs/operations.md
"Running in production").
"""
from restsvc.wsgi import app

__all__ = ["app"]
