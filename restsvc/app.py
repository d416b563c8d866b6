"""RestApp: the WSGI callable. Everything is built once, in ``__init__``."""
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import peewee
from werkzeug.exceptions import HTTPException, MethodNotAllowed
from werkzeug.routing import Map
from werkzeug.wrappers import Response

from . import db, schema
from .api import all_rules, batch, oauth, replay, signin
from .api.events import handed_over
from .api.docs import documents
from .application import Application, import_application
from .bodies import limit_body
from .data.bound import DataAccess
from .data.datamanager import DataManager
from .data.write.history import HistoryItem
from .data.read.queries import PredefinedQueries, Query
from .data.read.queryconfig import QueryConfigError, load_queries
from .data.write.rowrules import check_declarations
from .events.aftercommit import HookPosition
from .events.feed import StreamSlots, Tickets, closing
from .events.hub import Hub
from .events.outbox import ChangeEvent
from .events.webhooks import WebhookDelivery, WebhookSubscription
from .errors import DATABASE_UNAVAILABLE, ApiError, Forbidden
from .files.configured import file_storages
from .health import Readiness
from .idempotency import IdempotentRequest, Replays
from .proxies import TrustedProxies
from .router import Router
from .model.messages import Messages
from .model.metadata import Metadata, MetadataError
from .observability import requestid
from .observability.logs import escape_controls
from .observability import setup as setup_observability
from .observability.instruments import Instruments
from .observability.quotas import QuotaBucket, Quotas
from .observability.serving import Observer
from .reports.loader import ReportConfigError, load_reports
from .reports.registry import Reports
from .security.apikeys import KeyStore
from .security.authcodes import AuthorizationCode, CodeStore
from .security.authorize import Authorizer
from .security.authserver import AuthServer
from .security.clients import Clients
from .security.cors import PREFLIGHT_VARY, Cors
from .security.gate import Gate
from .security.keytable import ApiKey
from .security.ratelimit import AuthAttempt, FailureLimiter
from .security.registry import RoleRegistry
from .security.signinpage import SignInPage
from .security.tenants import Tenant, TenantDirectory, Tenants
from .security.tokens import StoredToken, TokenStore
from .security.users import User, Users
from .services.config import load_services_config
from .services.registry import ServiceConfigError, Services, registered_objects
from .settings import Settings, SettingsError
from .web import Context, Request, add_header, caller_locale, empty_response, error_response

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from .security.jwtissuers import JwtIssuers

log = logging.getLogger("restsvc")

# Every application gets these entities beside its own, and these tables.
BUILT_IN_ENTITIES = (User, Tenant, HistoryItem)
BUILT_IN_MODELS = (StoredToken, AuthAttempt, AuthorizationCode, QuotaBucket, IdempotentRequest,
                   ChangeEvent, WebhookSubscription, WebhookDelivery, HookPosition, ApiKey)
# Sign-in requests are held by the sign-in limits, not by quotas; a batch
# counts itself and each of its operations (api/batch.py).
_UNMETERED = frozenset([*(rule.endpoint for rule in oauth.rules + signin.rules), batch.run_batch])


def load_model(application: Application,
               search_language: str = "english") -> tuple[Metadata, RoleRegistry]:
    """The application's metadata and roles, checked: what ``serve`` and
    ``routes`` refuse, they refuse here, with the same message."""
    try:
        metadata = Metadata(BUILT_IN_ENTITIES + tuple(application.entities), application.enums,
                            search_language)
        roles = RoleRegistry(metadata, application.resource_roles, application.row_level_roles)
        check_declarations(metadata, roles)
    except MetadataError as exc:
        raise SettingsError(f"svc.application: {exc}") from None
    return metadata, roles


class RestApp:
    def __init__(self, settings: Settings, application: Application | None = None,
                 check_schema: bool = True, announce: bool = True) -> None:
        self.settings = settings
        self.application = application or import_application(settings.application, settings.base_dir)
        self.metadata, self.roles = load_model(self.application, settings.search_language)
        self.messages = Messages(settings.path(settings.messages_dir), settings.available_locales)
        queries = self._load_queries()
        self.services = self._load_services()
        self.database = db.open_database(settings.database_url, settings.database_pool_size,
                                         settings.sqlite_synchronous, settings.sqlite_wal_limit)
        self.data = DataManager(settings, self.metadata, self.database)
        self.data.bind = functools.partial(DataAccess, self.data)     # lifecycle hooks' data
        self.queries = PredefinedQueries(self.data, queries)
        self.reports = self._load_reports()
        self.tokens = TokenStore(settings.secret_key)
        self.replays = Replays(settings.idempotency_expiry, database=self.database)
        self.clients = Clients(settings.clients, self.roles)
        self.users = Users(self.roles)
        self.keys = KeyStore(self.tokens, self.clients, self.roles)
        limiter = FailureLimiter(settings.auth_max_failures, settings.auth_address_max_failures,
                                 settings.auth_failure_window)
        self.authserver = AuthServer(self.clients, self.tokens, CodeStore(self.tokens), self.users,
                                     limiter, settings.realm)
        self.authorizer = Authorizer(self.authserver, settings.secret_key)
        self.signin_page = SignInPage(self.messages, settings.signin_template
                                      and settings.path(settings.signin_template))
        self.tenants = Tenants()
        # Tokens are asked their tenant only when an entity of the application's has tenants.
        self.tenant_directory = TenantDirectory(self.clients, any(
            meta.tenant and meta.model not in BUILT_IN_ENTITIES
            for meta in self.metadata.entities.values()), self.users.tenant_of)
        self.gate = Gate(settings, self.tokens, self.roles, self._jwt_issuers(), self.keys,
                         self.tenant_directory)
        self.cors = Cors(settings) if settings.cors_allowed_origins else None
        # None without trusted proxies: nothing to ask per request.
        self.proxies = TrustedProxies(settings.trusted_proxies) or None
        self.files = file_storages(settings)
        self.event_streams = StreamSlots(settings.events_max_streams, settings.events_caller_share)
        self.event_tickets = Tickets(settings.secret_key, settings.events_ticket_lifetime)
        self.event_hub = Hub(self.database, settings.events_stream_poll_interval, closing)
        self.readiness = Readiness(self.database, self.files, settings.health_timeout)
        self.url_map = Map([rule.empty() for rule in all_rules(self.application, settings)],
                           strict_slashes=False, merge_slashes=False)
        # The one matcher of routes (router.py): every request's rule, a batch's operations'.
        self.router = Router(self.url_map)
        observability = setup_observability(self)
        self.observer: Observer | None = observability.observer
        self.instruments: Instruments | None = observability.instruments
        self.quotas: Quotas | None = observability.quotas
        self.documents = documents(self, queries)
        # The start-up summary: one line per fact (restsvc/docs/operations.md "Running in production").
        facts = [f"settings: {settings.source or '(given in code, no file)'}",
                 f"database: {db.display_url(settings.database_url)}"]
        if settings.init_schema:
            facts += self.init_schema(demo_data=settings.demo_data)
        elif check_schema:
            self.check_schema()
            facts += ["migrations: none applied (svc.datasource.init-schema is false; the "
                      "schema was checked: restsvc migrate applies them)",
                      "demo data: not loaded (svc.datasource.init-schema is false)"]
        if announce:
            for fact in facts:
                log.info("%s", fact)

    def _jwt_issuers(self) -> "JwtIssuers | None":
        """Resource-server mode for JWTs of configured identity providers, or None."""
        issuers = self.settings.jwt_issuers
        if not issuers:
            return None
        for issuer in issuers:
            for role, codes in issuer.role_mapping.items():
                unknown = [code for code in codes if code not in self.roles]
                if unknown:
                    raise SettingsError(f"svc.resource-server.jwt.{issuer.name}.role-mapping."
                                        f"{role}: unknown role code {unknown[0]!r}")
        try:
            from .security.jwtissuers import JwtIssuers
        except ImportError:
            raise SettingsError("svc.resource-server.jwt: needs PyJWT: "
                                "pip install 'restsvc[jwt]'") from None
        return JwtIssuers(issuers)

    def _load_queries(self) -> Sequence[Query]:
        if not self.settings.queries_config:
            return ()
        try:
            queries: Sequence[Query] = load_queries(
                self.settings.path(self.settings.queries_config), self.metadata)
        except QueryConfigError as exc:
            raise SettingsError(f"svc.rest.queries-config: {exc}") from None
        return queries

    def _load_services(self) -> Services:
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

    def _load_reports(self) -> Reports:
        settings = self.settings
        try:
            groups, reports = load_reports(settings.path(settings.reports_dir), self.metadata)
            return Reports(groups, reports, self.roles.resource.values(), settings.reports_max_rows)
        except ReportConfigError as exc:
            raise SettingsError(f"svc.reports.dir: {exc}") from None

    @property
    def models(self) -> tuple[type[peewee.Model], ...]:
        links: tuple[type[peewee.Model], ...] = self.metadata.link_models()
        return BUILT_IN_MODELS + BUILT_IN_ENTITIES + tuple(self.application.entities) + links

    def init_schema(self, demo_data: bool = False) -> list[str]:
        """Apply what ``restsvc migrate`` would without asking (a new database:
        all of it), then the start-up check; fill an empty database with demo
        data. Concurrent workers starting together serialize on a lock.
        The start-up summary's lines of what was done."""
        try:
            outcome = schema.prepare(self.database, self.models,
                                     self.metadata.indexed_text_fields(),
                                     search=self.metadata.full_text())
            facts = [f"migrations: {len(outcome.steps)} steps applied"
                     if outcome.applied else "migrations: none needed (the database matches "
                                             "the model)"]
            if not demo_data:
                facts.append("demo data: not loaded (svc.demo-data is false)")
            elif not self.application.load_demo_data:
                facts.append("demo data: none (the application declares no load_demo_data)")
            else:
                with db.exclusive_setup(self.database):
                    loaded = self.application.load_demo_data(self.database)
                facts.append("demo data: not loaded (the database already holds data)"
                             if loaded is False else "demo data: loaded")
            return facts
        finally:
            if not self.database.is_closed():
                self.database.close()

    def check_schema(self) -> None:
        """Refuse a database that does not match the model (``schema.SchemaMismatch``)."""
        try:
            schema.check(self.database, self.models, self.metadata.indexed_text_fields(),
                         self.metadata.full_text())
        except Exception as exc:
            if not db.is_unavailable(exc, self.database):
                raise
            # Started while the database is down: readiness says so; the
            # schema is checked by the next start (or `restsvc migrate --status`).
            log.warning("schema not checked: the database does not answer (%s)", exc)
        finally:
            if not self.database.is_closed():
                self.database.close()

    def __call__(self, environ: "WSGIEnvironment", start_response: "StartResponse") -> Iterable[bytes]:
        if self.proxies is not None:
            self.proxies.apply(environ)     # the client's address and scheme, if forwarded
        request_id = requestid.request_id(environ)
        context = requestid.current.set(request_id)
        try:
            request = Request(environ)
            response: Response
            if self.observer is None:
                response = self._answer(request)
            else:
                response = self.observer.observe(self._answer, request)
            add_header(response, requestid.HEADER, request_id)
            # A change feed stream the stream process took (api/events.py).
            taken = handed_over(environ, response)
            if taken is not None:
                response = taken
                add_header(response, requestid.HEADER, request_id)
            return response(environ, start_response)
        finally:
            requestid.current.reset(context)

    def _answer(self, request: Request) -> Response:
        cors = self.cors
        if cors is not None and cors.is_preflight(request.method, request.headers):
            return self._preflight(cors, request)
        response = self._respond(request)
        if cors is not None:
            response.headers.update(cors.actual(request.headers))
            response.vary.add("Origin")
        return response

    def _preflight(self, cors: Cors, request: Request) -> Response:
        """Answered before the gate: a browser sends no token with a preflight."""
        headers = cors.preflight(request.headers)
        response: Response = empty_response(204, headers) if headers is not None else \
            error_response(Forbidden("Forbidden", "Invalid CORS request"))
        response.vary.update(PREFLIGHT_VARY)
        return response

    def _messages_for(self, request: Request) -> Callable[[str], str | None]:
        """The message lookup of the caller's language (Accept-Language, the
        session's locale, the default): bundle key -> template or None."""
        locale = caller_locale(request, getattr(request, "principal", None),
                               self.settings.available_locales)
        return lambda key: self.messages.text(key, locale)

    def _respond(self, request: Request) -> Response:
        response: Response
        try:
            principal = request.principal = self.gate.principal(
                request.path, request.environ.get("HTTP_AUTHORIZATION"))
            rule, args = self.router.match(request.path, request.method)
            request.route, endpoint = rule.rule, rule.endpoint
            quota = None
            if self.quotas is not None and endpoint not in _UNMETERED:
                quota = self.quotas.check(principal)
            # Bodies are capped here, once; a handler that streams its body
            # (file upload) counts against its own limit instead.
            if not getattr(endpoint, "streams_body", False):
                limit_body(request, self.settings.max_request_size)
            context = Context(self, request, principal)
            context.check_acting_tenant()
            if mark := getattr(endpoint, "idempotent", False):
                response = replay.answer(self.replays, context,
                                         lambda: endpoint(context, **args), mark)
            else:
                response = endpoint(context, **args)
            if quota is not None:
                for name, value in quota.items():
                    add_header(response, name, value)
        except ApiError as exc:
            request.error = exc.error
            response = error_response(exc, self._messages_for(request))
        except MethodNotAllowed as exc:
            request.error = "Method not allowed"
            response = error_response(ApiError(
                "Method not allowed", f"{request.method} is not supported here", status=405,
                headers={"Allow": ", ".join(exc.valid_methods or ())}))
        except HTTPException as exc:
            request.error = exc.name
            response = error_response(ApiError(exc.name, exc.description or "", status=exc.code))
        except Exception as exc:
            if db.is_unavailable(exc, self.database):
                log.warning("database unavailable on %s %s: %s", *_logged(request), exc)
                request.error = DATABASE_UNAVAILABLE.error
                response = error_response(DATABASE_UNAVAILABLE)
            else:
                log.exception("unhandled error on %s %s", *_logged(request))
                request.error = "Server error"
                # The id is what the caller can quote; the log line has the traceback.
                response = error_response(ApiError(
                    "Server error", f"Request id {requestid.current.get()}", status=500))
        finally:
            db.release(self.database)
        if self.keys.pending:       # API keys' last uses: written once the answer is out
            response.call_on_close(self._record_key_uses)
        return response

    def _record_key_uses(self) -> None:
        try:
            self.keys.record_uses()
        except Exception:
            # The answer is out; the next use of the key notes it again.
            log.warning("the last use of API keys was not written", exc_info=True)
        finally:
            db.release(self.database)


def _logged(request: Request) -> tuple[str, str]:
    """The method and path as a log line shows them, under a host's formatter too."""
    return escape_controls(request.method), escape_controls(request.path)
