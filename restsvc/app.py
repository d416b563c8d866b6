"""RestApp: the WSGI callable. Everything is built once, in ``__init__``."""
import logging

from werkzeug.exceptions import HTTPException, MethodNotAllowed
from werkzeug.routing import Map

from . import db
from .api import all_rules
from .api.docs import documents
from .application import import_application
from .data.datamanager import DataManager
from .data.queries import PredefinedQueries
from .data.queryconfig import QueryConfigError, load_queries
from .errors import DATABASE_UNAVAILABLE, SERVER_ERROR, ApiError, Forbidden
from .files.storage import file_storages
from .health import Readiness
from .model.messages import Messages
from .model.metadata import Metadata, MetadataError
from .reports.loader import ReportConfigError, load_reports
from .reports.registry import Reports
from .security.authserver import AuthServer
from .security.clients import Clients
from .security.cors import PREFLIGHT_VARY, Cors
from .security.gate import Gate
from .security.ratelimit import AuthAttempt, FailureLimiter
from .security.roles import RoleRegistry
from .security.tokens import StoredToken, TokenStore
from .security.users import User, Users
from .services.config import load_services_config
from .services.registry import ServiceConfigError, Services, registered_objects
from .settings import SettingsError
from .web import Context, Request, empty_response, error_response, limit_body

log = logging.getLogger("restsvc")

# Every application gets these entities beside its own, and these tables.
BUILT_IN_ENTITIES = (User,)
BUILT_IN_MODELS = (StoredToken, AuthAttempt)


class RestApp:
    def __init__(self, settings, application=None):
        self.settings = settings
        self.application = application or import_application(settings.application)
        try:
            self.metadata = Metadata(BUILT_IN_ENTITIES + tuple(self.application.entities),
                                     self.application.enums)
            self.roles = RoleRegistry(self.metadata, self.application.resource_roles,
                                      self.application.row_level_roles)
        except MetadataError as exc:
            raise SettingsError(f"svc.application: {exc}") from None
        self.messages = Messages(settings.path(settings.messages_dir), settings.available_locales)
        queries = self._load_queries()
        self.services = self._load_services()
        self.database = db.open_database(settings.database_url, settings.database_pool_size,
                                         settings.sqlite_synchronous)
        self.data = DataManager(settings, self.metadata, self.database)
        self.queries = PredefinedQueries(self.data, queries)
        self.reports = self._load_reports()
        self.tokens = TokenStore(settings.secret_key)
        self.clients = Clients(settings.clients, self.roles)
        self.users = Users(self.roles)
        limiter = FailureLimiter(settings.auth_max_failures, settings.auth_address_max_failures,
                                 settings.auth_failure_window)
        self.authserver = AuthServer(self.clients, self.tokens, self.users, limiter, settings.realm)
        self.gate = Gate(settings, self.tokens, self.roles)
        self.cors = Cors(settings) if settings.cors_allowed_origins else None
        self.files = file_storages(settings)
        self.readiness = Readiness(self.database, self.files, settings.health_timeout)
        self.url_map = Map([rule.empty() for rule in all_rules(self.application, settings)],
                           strict_slashes=False, merge_slashes=False)
        # Bound once: handlers never build URLs from it, matching needs only
        # the path and the method (binding per request costs more than matching).
        self._routes = self.url_map.bind("restsvc")
        self._matched = {}
        self.documents = documents(self, queries)
        if settings.init_schema:
            self.init_schema(demo_data=settings.demo_data)

    def _load_queries(self):
        if not self.settings.queries_config:
            return ()
        try:
            return load_queries(self.settings.path(self.settings.queries_config), self.metadata)
        except QueryConfigError as exc:
            raise SettingsError(f"svc.rest.queries-config: {exc}") from None

    def _load_services(self):
        try:
            objects = registered_objects(self.application.services)
            registry = Services(self.metadata, objects)
            registry.check_grants(self.roles.resource.values())
        except ServiceConfigError as exc:
            raise SettingsError(f"svc.application: services: {exc}") from None
        if not self.settings.services_config:
            return registry
        try:
            return Services(self.metadata, objects, load_services_config(
                self.settings.path(self.settings.services_config), self.metadata, objects))
        except ServiceConfigError as exc:
            raise SettingsError(f"svc.rest.services-config: {exc}") from None

    def _load_reports(self):
        settings = self.settings
        try:
            groups, reports = load_reports(settings.path(settings.reports_dir), self.metadata)
            return Reports(groups, reports, self.roles.resource.values(), settings.reports_max_rows)
        except ReportConfigError as exc:
            raise SettingsError(f"svc.reports.dir: {exc}") from None

    @property
    def models(self):
        return (BUILT_IN_MODELS + BUILT_IN_ENTITIES + tuple(self.application.entities)
                + self.metadata.link_models())

    def init_schema(self, demo_data=False):
        """Create missing tables (idempotent); fill an empty database with demo data.
        Concurrent workers starting together serialize on a lock."""
        try:
            with db.exclusive_setup(self.database):
                db.create_schema(self.database, self.models,
                                 self.metadata.indexed_text_fields())
                if demo_data and self.application.load_demo_data:
                    self.application.load_demo_data(self.database)
        finally:
            if not self.database.is_closed():
                self.database.close()

    def __call__(self, environ, start_response):
        # Not stored in the environ (Werkzeug's default): that would make a
        # reference cycle per request, left for the garbage collector.
        request = Request(environ, populate_request=False)
        if self.cors is not None and self.cors.is_preflight(request.method, request.headers):
            response = self._preflight(request)
        else:
            response = self._respond(request)
            if self.cors is not None:
                response.headers.update(self.cors.actual(request.headers))
                response.vary.add("Origin")
        return response(environ, start_response)

    def _preflight(self, request):
        """Answered before the gate: a browser sends no token with a preflight."""
        headers = self.cors.preflight(request.headers)
        response = empty_response(204, headers) if headers is not None else error_response(
            Forbidden("Forbidden", "Invalid CORS request"))
        response.vary.update(PREFLIGHT_VARY)
        return response

    def _match(self, path, method):
        """Werkzeug's matcher, with recent answers kept: a matched path costs a
        dict lookup the next time (bounded, so odd paths cannot grow it)."""
        key = (path, method)
        found = self._matched.get(key)
        if found is None:
            found = self._routes.match(path, method)
            if len(self._matched) >= 4096:
                self._matched.clear()
            self._matched[key] = found
        return found

    def _respond(self, request):
        try:
            principal = self.gate.principal(request.path, request.headers.get("Authorization"))
            endpoint, args = self._match(request.path, request.method)
            # Bodies are capped here, once; a handler that streams its body
            # (file upload) counts against its own limit instead.
            if not getattr(endpoint, "streams_body", False):
                limit_body(request, self.settings.max_request_size)
            return endpoint(Context(self, request, principal), **args)
        except ApiError as exc:
            return error_response(exc)
        except MethodNotAllowed as exc:
            return error_response(ApiError(
                "Method not allowed", f"{request.method} is not supported here", status=405,
                headers={"Allow": ", ".join(exc.valid_methods or ())}))
        except HTTPException as exc:
            return error_response(ApiError(exc.name, exc.description or "", status=exc.code))
        except Exception as exc:
            if db.is_unavailable(exc, self.database):
                log.warning("database unavailable on %s %s: %s", request.method, request.path, exc)
                return error_response(DATABASE_UNAVAILABLE)
            log.exception("unhandled error on %s %s", request.method, request.path)
            return error_response(SERVER_ERROR)
        finally:
            db.release(self.database)
