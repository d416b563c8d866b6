"""Services API: registered business services (reference section 4)."""
import time
from typing import TYPE_CHECKING, Any, NoReturn

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import MAX_QUERY_BODY, read_json_body
from ..errors import BadRequest
from ..web import empty_response, json_response, text_response
from .replay import idempotent_apart

if TYPE_CHECKING:
    from ..services.registry import ServiceMethod
    from ..services.results import Result
    from ..web import Context


def list_services(ctx: "Context") -> Response:
    return json_response(ctx.app.services.describe(ctx.permissions))


def get_service(ctx: "Context", service_name: str) -> Response:
    return json_response(ctx.app.services.describe(ctx.permissions, service_name))


@idempotent_apart
def invoke(ctx: "Context", service_name: str, method_name: str) -> Response:
    """GET: parameters in the query string; POST: one JSON object (no body: none).
    The permission check comes before any parameter is read."""
    request = ctx.request
    services = ctx.app.services
    is_text = request.method in ("GET", "HEAD")
    method = services.find(ctx.permissions, service_name, method_name,
                           "GET" if is_text else request.method)
    values: dict[str, Any]
    if is_text:
        values = dict(request.args.lists())
    elif request.content_length or request.headers.get("Transfer-Encoding"):
        values = read_json_body(request, max_bytes=MAX_QUERY_BODY)
        if not isinstance(values, dict):
            raise BadRequest("Malformed request JSON data structure",
                             "The body must be a JSON object of parameter values")
    else:
        values = {}
    result = _invoke(ctx, method, values, is_text)
    if result.kind == "empty":
        return empty_response(204)
    if result.kind == "text":
        assert isinstance(result.body, str)     # a simple value's text form
        return text_response(result.body)
    return json_response(result.body)


def _invoke(ctx: "Context", method: "ServiceMethod", values: dict[str, Any],
            is_text: bool) -> "Result":
    services, instruments = ctx.app.services, ctx.app.instruments
    if instruments is None:
        return services.invoke(method, values, is_text, lambda: ctx.caller, ctx.data)
    started, outcome = time.perf_counter(), "error"
    try:
        result = services.invoke(method, values, is_text, lambda: ctx.caller, ctx.data)
        outcome = "ok"
        return result
    finally:
        instruments.service_call(method.service, method.name, outcome, started)


def other_method(ctx: "Context", service_name: str, method_name: str) -> NoReturn:
    """Any other HTTP method: 405 whose Allow names the methods this service
    method declares (the router's 405 would name GET and POST for all)."""
    ctx.app.services.find(ctx.permissions, service_name, method_name, ctx.request.method)
    raise AssertionError("find answers only GET and POST")     # pragma: no cover


other_method.undocumented = True  # type: ignore[attr-defined]  # not an operation: the OpenAPI documents leave it out

rules = [
    Rule("/rest/services", methods=["GET"], endpoint=list_services),
    Rule("/rest/services/<service_name>", methods=["GET"], endpoint=get_service),
    Rule("/rest/services/<service_name>/<method_name>", methods=["GET", "POST"], endpoint=invoke),
    Rule("/rest/services/<service_name>/<method_name>",
         methods=["PUT", "PATCH", "DELETE", "OPTIONS"], endpoint=other_method),
]
