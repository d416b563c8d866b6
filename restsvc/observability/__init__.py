"""Observability: metrics (``metrics``, ``multiprocess``, ``instruments``),
request ids and log lines (``requestid``, ``logs``), database statements
(``statements``), tracing (``tracing``), per-client quotas (``quotas``),
and the per-request observer that ties them to the app (``serving``).

``setup`` builds what the settings ask for, once, at startup; what is off
costs nothing per request (the app holds ``None``)."""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

import peewee

from ..settings import Settings
from . import logs, statements
from .instruments import Instruments, Pool
from .quotas import Quotas
from .serving import Observer

if TYPE_CHECKING:
    from .tracing import Tracing


@dataclass
class Observability:
    observer: Observer | None = None        # None when nothing is observed per request
    instruments: Instruments | None = None  # None when metrics are off
    quotas: Quotas | None = None            # None without rate limits
    tracing: "Tracing | None" = None        # None unless enabled


class _App(Protocol):
    """What ``setup`` reads of a RestApp: its settings, and what tracing wraps."""

    @property
    def settings(self) -> Settings: ...
    @property
    def database(self) -> peewee.Database: ...
    @property
    def gate(self) -> object: ...
    @property
    def services(self) -> object: ...
    @property
    def reports(self) -> object: ...
    @property
    def files(self) -> Iterable[object]: ...


def setup(app: _App) -> Observability:
    settings = app.settings
    tracing = None
    if settings.tracing:
        from .tracing import Tracing          # OpenTelemetry is imported only when on
        tracing = Tracing()
        tracing.wrap(app.gate, "principal", "token check")
        tracing.wrap(app.services, "invoke", "service method",
                     lambda method, *rest: {"restsvc.service": _service_name(method)})
        tracing.wrap(app.reports, "run", "report run",
                     lambda report, *rest: {"restsvc.report": getattr(report, "code", "?")})
        for storage in app.files:
            for name in ("write", "stat", "open", "delete"):
                tracing.wrap(storage, name, f"file storage {name}")
    trace_id = tracing.current_trace_id if tracing is not None else None
    direct = logs.configure(settings, trace_id)
    instruments = None
    if settings.metrics_path:
        # The PostgreSQL pool's connections are sampled.
        pool = cast(Pool, app.database) if hasattr(app.database, "counts") else None
        instruments = Instruments(settings.metrics_client_label, pool,
                                  tenant_label=settings.metrics_tenant_label)
    statements.observe(app.database, instruments.statement_times if instruments else None,
                       settings.slow_statement, tracing)
    request_log = logs.RequestLog(settings.log_format == "json", direct, trace_id) \
        if settings.log_requests else None
    observer = Observer(instruments, request_log, tracing) \
        if instruments or request_log or tracing else None
    quotas = Quotas(settings.rate_limits, instruments.quota_refusals if instruments else None) \
        if settings.rate_limits else None
    return Observability(observer, instruments, quotas, tracing)


def _service_name(method: object) -> str:
    return f"{getattr(method, 'service', '?')}.{getattr(method, 'name', '?')}"
