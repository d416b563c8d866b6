"""Observability: metrics (``metrics``, ``multiprocess``, ``instruments``),
request ids and log lines (``requestid``, ``logs``), database statements
(``statements``), tracing (``tracing``), per-client quotas (``quotas``),
and the per-request observer that ties them to the app (``serving``).

``setup`` builds what the settings ask for, once, at startup; what is off
costs nothing per request (the app holds ``None``)."""
from dataclasses import dataclass

from . import logs, statements
from .instruments import Instruments
from .quotas import Quotas
from .serving import Observer


@dataclass
class Observability:
    observer: object = None       # serving.Observer, None when nothing is observed per request
    instruments: object = None    # instruments.Instruments, None when metrics are off
    quotas: object = None         # quotas.Quotas, None without rate limits
    tracing: object = None        # tracing.Tracing, None unless enabled


def setup(app):
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
        pool = app.database if hasattr(app.database, "_in_use") else None
        instruments = Instruments(settings.metrics_client_label, pool)
    statements.observe(app.database, instruments.statement_times if instruments else None,
                       settings.slow_statement, tracing)
    request_log = logs.RequestLog(settings.log_format == "json", direct, trace_id) \
        if settings.log_requests else None
    observer = Observer(instruments, request_log, tracing) \
        if instruments or request_log or tracing else None
    quotas = Quotas(settings.rate_limits, instruments.quota_refusals if instruments else None) \
        if settings.rate_limits else None
    return Observability(observer, instruments, quotas, tracing)


def _service_name(method):
    return f"{getattr(method, 'service', '?')}.{getattr(method, 'name', '?')}"
