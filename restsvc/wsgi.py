"""The WSGI application for any WSGI server, wherever restsvc is installed::

    gunicorn -c python:restsvc.gunicorn_config restsvc.wsgi:app

Settings from ``$RESTSVC_CONFIG`` (default ``config/restsvc.yaml`` of the
working directory), as for ``restsvc serve``. Importing this module builds
the application; ``restsvc.create_app()`` does the same for a host that
builds it itself.
"""
from . import create_app
from .app import RestApp

app: RestApp = create_app()
