"""RestApp: the WSGI callable. Everything is built once, in ``__init__``."""
import logging

from werkzeug.exceptions import HTTPException, MethodNotAllowed
from werkzeug.routing import Map
from werkzeug.wrappers import Request

from . import db
from .api import API_MODULES
from .application import import_application
from .data.datamanager import DataManager
from .data.queries import PredefinedQueries
from .data.queryconfig import QueryConfigError, load_queries
from .errors import SERVER_ERROR, ApiError
from .model.messages import Messages
from .model.metadata import Metadata, MetadataError
from .security.authserver import AuthServer
from .security.clients import Clients
from .security.gate import Gate
from .security.roles import RoleRegistry
from .security.tokens import StoredToken, TokenStore
from .settings import SettingsError
from .web import Context, error_response

log = logging.getLogger("restsvc")

BUILT_IN_MODELS = (StoredToken,)


class RestApp:
    def __init__(self, settings, application=None):
        self.settings = settings
        self.application = application or import_application(settings.application)
        try:
            self.metadata = Metadata(self.application.entities, self.application.enums)
            self.roles = RoleRegistry(self.metadata, self.application.resource_roles,
                                      self.application.row_level_roles)
        except MetadataError as exc:
            raise SettingsError(f"svc.application: {exc}") from None
        self.messages = Messages(settings.path(settings.messages_dir), settings.available_locales)
        queries = self._load_queries()
        self.database = db.open_database(settings.database_url, settings.database_pool_size)
        self.data = DataManager(settings, self.metadata, self.database)
        self.queries = PredefinedQueries(self.data, queries)
        self.tokens = TokenStore(settings.secret_key)
        self.clients = Clients(settings.clients, self.roles)
        self.authserver = AuthServer(self.clients, self.tokens, settings.realm)
        self.gate = Gate(settings, self.tokens, self.roles)
        self.url_map = Map([rule.empty() for module in API_MODULES for rule in module.rules],
                           strict_slashes=False, merge_slashes=False)
        if settings.init_schema:
            self.init_schema(demo_data=settings.demo_data)

    def _load_queries(self):
        if not self.settings.queries_config:
            return ()
        try:
            return load_queries(self.settings.path(self.settings.queries_config), self.metadata)
        except QueryConfigError as exc:
            raise SettingsError(f"svc.rest.queries-config: {exc}") from None

    @property
    def models(self):
        return BUILT_IN_MODELS + tuple(self.application.entities)

    def init_schema(self, demo_data=False):
        """Create missing tables (idempotent); fill an empty database with demo data.
        Concurrent workers starting together serialize on a lock."""
        try:
            with db.exclusive_setup(self.database):
                self.database.create_tables(self.models, safe=True)
                if demo_data and self.application.load_demo_data:
                    self.application.load_demo_data(self.database)
        finally:
            if not self.database.is_closed():
                self.database.close()

    def __call__(self, environ, start_response):
        request = Request(environ)
        request.max_content_length = self.settings.max_request_size
        try:
            principal = self.gate.principal(request.path, request.headers.get("Authorization"))
            endpoint, args = self.url_map.bind_to_environ(environ).match()
            response = endpoint(Context(self, request, principal), **args)
        except ApiError as exc:
            response = error_response(exc)
        except MethodNotAllowed as exc:
            response = error_response(ApiError(
                "Method not allowed", f"{request.method} is not supported here", status=405,
                headers={"Allow": ", ".join(exc.valid_methods or ())}))
        except HTTPException as exc:
            response = error_response(ApiError(exc.name, exc.description or "", status=exc.code))
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            response = error_response(SERVER_ERROR)
        finally:
            db.release(self.database)
        return response(environ, start_response)
