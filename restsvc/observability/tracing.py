"""OpenTelemetry tracing (the optional extra ``otel``), off unless
``svc.tracing.enabled``. Off, nothing here is imported or called: the app
holds ``None`` and wraps nothing.

On: a server span per request (a W3C ``traceparent`` from the caller is its
parent), and child spans for what a request waits on -- database statements,
the token check, service methods, report runs, file storage calls -- by
wrapping those objects' methods once at startup. Spans go to the global
tracer provider; when the host has set none, one is made from the standard
``OTEL_*`` variables with the OTLP/HTTP exporter.
"""
import functools
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..settings import SettingsError
from .labels import HTTP_METHODS

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span
    from opentelemetry.util.types import Attributes

TRACER = "restsvc"


class Tracing:
    def __init__(self) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.trace.propagation.tracecontext import \
                TraceContextTextMapPropagator
        except ImportError:
            raise SettingsError("svc.tracing.enabled: tracing needs OpenTelemetry: "
                                "pip install 'restsvc[otel]'") from None
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            trace.set_tracer_provider(_sdk_provider())
        self.trace = trace
        self.tracer = trace.get_tracer(TRACER)
        self.propagator = TraceContextTextMapPropagator()

    def server_span(self, environ: "WSGIEnvironment") -> AbstractContextManager["Span"]:
        """The request's span, as a context manager that makes it current."""
        carrier: dict[str, str] = {}
        if "HTTP_TRACEPARENT" in environ:
            carrier["traceparent"] = environ["HTTP_TRACEPARENT"]
            if "HTTP_TRACESTATE" in environ:
                carrier["tracestate"] = environ["HTTP_TRACESTATE"]
        # OpenTelemetry's conventions: an unknown method is "_OTHER" (the span
        # named "HTTP"), so invented methods do not grow the span names.
        method: str = environ.get("REQUEST_METHOD", "")
        if method in HTTP_METHODS:
            name, attributes = method, {"http.request.method": method}
        else:
            name, attributes = "HTTP", {"http.request.method": "_OTHER",
                                        "http.request.method_original": method[:100]}
        return self.tracer.start_as_current_span(
            name, context=self.propagator.extract(carrier), kind=self.trace.SpanKind.SERVER,
            attributes=attributes)

    def finish(self, span: "Span", route: str, status: int) -> None:
        # A span the sampler dropped (a caller's traceparent not sampled) is
        # the API's NonRecordingSpan, which has no name.
        name = getattr(span, "name", None)
        if name is not None:
            span.update_name(f"{name} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        if status >= 500:
            span.set_status(self.trace.Status(self.trace.StatusCode.ERROR))

    def current_trace_id(self) -> str | None:
        context = self.trace.get_current_span().get_span_context()
        return format(context.trace_id, "032x") if context.is_valid else None

    def wrap(self, target: object, method_name: str, span_name: str,
             attributes: "Callable[..., Attributes] | None" = None) -> None:
        """Replace ``target.method_name`` by one that runs in a child span;
        ``attributes(*args)`` names what the span is about."""
        original: Callable[..., object] = getattr(target, method_name)
        tracer = self.tracer

        @functools.wraps(original)
        def traced(*args: object, **kwargs: object) -> object:
            with tracer.start_as_current_span(
                    span_name, attributes=attributes(*args) if attributes else None):
                return original(*args, **kwargs)
        setattr(target, method_name, traced)


def _sdk_provider() -> "TracerProvider":
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise SettingsError("svc.tracing.enabled: no tracer provider is set up and the "
                            "OpenTelemetry SDK with its OTLP exporter is missing: "
                            "pip install 'restsvc[otel]'") from None
    # OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_ENDPOINT etc. are read by the SDK.
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {"service.name": "restsvc"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider
