"""OpenTelemetry spans, exported to memory."""
import pytest
from werkzeug.test import Client

from conftest import bearer, get_token

trace = pytest.importorskip("opentelemetry.trace", reason="opentelemetry-sdk (test extra) is missing")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider():
    # The global provider can be set once per process: this module's.
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(tracer_provider)


@pytest.fixture
def traced(make_app):
    return Client(make_app({"svc.tracing.enabled": True}))


def test_a_request_is_a_server_span_with_child_spans_for_token_check_and_statements(traced):
    token = get_token(traced)
    EXPORTER.clear()
    parent_trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    response = traced.get("/rest/entities/Customer?limit=1", headers={
        **bearer(token), "traceparent": f"00-{parent_trace}-00f067aa0ba902b7-01"})
    assert response.status_code == 200
    spans = EXPORTER.get_finished_spans()
    (server,) = [span for span in spans if span.kind == trace.SpanKind.SERVER]
    assert server.name == "GET /rest/entities/<entity_name>"
    assert format(server.context.trace_id, "032x") == parent_trace
    assert server.parent.span_id == 0x00f067aa0ba902b7
    assert server.attributes["http.response.status_code"] == 200
    children = [span for span in spans if span.parent is not None
                and span.parent.span_id == server.context.span_id]
    names = {span.name for span in children}
    assert "token check" in names and "db statement" in names
    assert all(span.context.trace_id == server.context.trace_id for span in spans)


def test_a_request_whose_caller_did_not_sample_its_trace_is_answered_without_a_span(traced):
    # The sampler drops it: the span is the API's NonRecordingSpan, which has no name.
    token = get_token(traced)
    EXPORTER.clear()
    response = traced.get("/rest/entities/Customer?limit=1", headers={
        **bearer(token), "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})
    assert response.status_code == 200
    assert not [span for span in EXPORTER.get_finished_spans()
                if span.kind == trace.SpanKind.SERVER]


def test_a_service_call_is_a_span_of_its_own(traced):
    token = get_token(traced)
    EXPORTER.clear()
    traced.get("/rest/services/productPriceService/price?productId=x", headers=bearer(token))
    spans = EXPORTER.get_finished_spans()
    (service,) = [span for span in spans if span.name == "service method"]
    assert service.attributes["restsvc.service"] == "productPriceService.price"


def test_the_trace_id_is_on_the_log_lines(make_app, capsys):
    import json
    app = make_app({"svc.tracing.enabled": True, "svc.log.format": "json",
                    "svc.log.requests": True})
    client = Client(app)
    token = get_token(client)
    EXPORTER.clear()
    app.observer.request_log.flush()        # request lines are written in batches
    capsys.readouterr()
    client.get("/rest/entities/Customer?limit=1", headers=bearer(token))
    app.observer.request_log.flush()
    (server,) = [span for span in EXPORTER.get_finished_spans()
                 if span.kind == trace.SpanKind.SERVER]
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()
             if line.startswith("{")]
    (line,) = [line for line in lines if line["logger"] == "restsvc.request"]
    assert line["trace_id"] == format(server.context.trace_id, "032x")


def test_without_tracing_no_span_is_made(client, auth):
    EXPORTER.clear()
    client.get("/rest/entities/Customer?limit=1", headers=auth)
    assert EXPORTER.get_finished_spans() == ()


def test_an_invented_http_method_names_no_span_of_its_own(traced):
    EXPORTER.clear()
    traced.open("/health/live", method="ZFBBVTYNDQRPSSWE")
    (server,) = [span for span in EXPORTER.get_finished_spans()
                 if span.kind == trace.SpanKind.SERVER]
    assert server.name == "HTTP unmatched"
    assert server.attributes["http.request.method"] == "_OTHER"
    assert server.attributes["http.request.method_original"] == "ZFBBVTYNDQRPSSWE"
