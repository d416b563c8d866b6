"""The app as a request's handlers see it: its parts, built once at start-up.

``RestApp`` (app.py) builds them and assembles the route table from api/; a
handler reads them through its ``Context`` (web.py) as an ``AppParts``. The
protocol is what keeps that a one-way street: web.py and api/ name the parts,
never app.py, which imports them (ARCHITECTURE.md rule 15).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import peewee
    from werkzeug.routing import Map

    from .application import Application
    from .data.datamanager import DataManager
    from .data.read.queries import PredefinedQueries
    from .events.feed import StreamSlots, Tickets
    from .events.hub import Hub
    from .files.storage import FileStorages
    from .health import Readiness
    from .idempotency import Replays
    from .model.messages import Messages
    from .model.metadata import Metadata
    from .observability.instruments import Instruments
    from .observability.quotas import Quotas
    from .observability.serving import Observer
    from .openapi import Documents
    from .reports.registry import Reports
    from .router import Router
    from .security.apikeys import KeyStore
    from .security.authorize import Authorizer
    from .security.authserver import AuthServer
    from .security.clients import Clients
    from .security.gate import Gate
    from .security.registry import RoleRegistry
    from .security.signinpage import SignInPage
    from .security.tokens import TokenStore
    from .security.users import Users
    from .services.registry import Services
    from .security.tenants import TenantDirectory
    from .settings import Settings


class AppParts(Protocol):
    """What handlers read of the app; read-only: the parts never change."""

    @property
    def settings(self) -> Settings: ...
    @property
    def application(self) -> Application: ...
    @property
    def metadata(self) -> Metadata: ...
    @property
    def roles(self) -> RoleRegistry: ...
    @property
    def messages(self) -> Messages: ...
    @property
    def services(self) -> Services: ...
    @property
    def database(self) -> peewee.Database: ...
    @property
    def data(self) -> DataManager: ...
    @property
    def queries(self) -> PredefinedQueries: ...
    @property
    def reports(self) -> Reports: ...
    @property
    def tokens(self) -> TokenStore: ...
    @property
    def replays(self) -> Replays: ...
    @property
    def clients(self) -> Clients: ...
    @property
    def users(self) -> Users: ...
    @property
    def keys(self) -> KeyStore: ...
    @property
    def authserver(self) -> AuthServer: ...
    @property
    def authorizer(self) -> Authorizer: ...
    @property
    def signin_page(self) -> SignInPage: ...
    @property
    def gate(self) -> Gate: ...
    @property
    def tenant_directory(self) -> TenantDirectory: ...
    @property
    def files(self) -> FileStorages: ...
    @property
    def event_streams(self) -> StreamSlots: ...
    @property
    def event_tickets(self) -> Tickets: ...
    @property
    def event_hub(self) -> Hub: ...
    @property
    def readiness(self) -> Readiness: ...
    @property
    def instruments(self) -> Instruments | None: ...
    @property
    def quotas(self) -> Quotas | None: ...
    @property
    def observer(self) -> "Observer | None": ...
    @property
    def documents(self) -> Documents: ...
    @property
    def url_map(self) -> Map: ...

    @property
    def router(self) -> Router:
        """The one route matcher (a batch's operations ask it too)."""
        ...
