"""Batches: ``POST /rest/batch`` runs a list of writes in order, in one
transaction, all or nothing.

Each operation is the request it stands for (``method``, ``path`` with an
optional query string, ``body``), answered by the same handler as when it is
sent alone: with the caller's token (the gate decides for its path), its
permissions, row rules and scopes, through the one write path. Before
anything runs every operation is read, routed and counted against the
caller's quotas; each then runs as its own request for the metrics and the
request log. The first failure rolls everything back and answers its status
with ``{"error", "details", "index", "operation"}`` (``operation``: the
error body the request alone would have got).

A later operation refers to the id an earlier one answered with
``${<index>.id}`` (0-based) in its path or anywhere in its body: a JSON
string that is exactly the reference becomes the id as the earlier answer
wrote it; inside a longer string (or in the path) its text is put in.
"""
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from werkzeug.exceptions import MethodNotAllowed, NotFound as RouteNotFound
from werkzeug.routing import Rule
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Response

from ..bodies import limit_body, read_json_body
from ..db import write_transaction
from ..errors import ApiError, BadRequest, NotFound, PayloadTooLarge, localized_body
from ..jsonio import JsonObject, JsonValue, dumps_bytes, loads
from ..router import Arguments
from ..security.scopes import checks
from ..web import Context, Request, caller_locale, error_response, json_response
from . import changes, entities, services
from .replay import idempotent, wrote

if TYPE_CHECKING:
    from werkzeug.routing import Rule as RouteRule

    from ..security.gate import Principal

T = TypeVar("T")

# The handlers an operation may name: the writes of the Entities API, changes
# by filter and service calls (POST).
BATCHABLE = frozenset((
    entities.create, entities.update, entities.bulk_update, entities.delete,
    entities.bulk_delete, entities.restore, changes.update_by_search,
    changes.delete_by_search, services.invoke))
METHODS = ("POST", "PUT", "DELETE")
_KEYS = frozenset(("method", "path", "body"))
_MAX_PATH = 2048
_REFERENCE = re.compile(r"\$\{(\d+)\.id\}")
# What an operation's request keeps of the batch's own.
_INHERITED = ("HTTP_AUTHORIZATION", "HTTP_ACCEPT_LANGUAGE", "REMOTE_ADDR", "SCRIPT_NAME")


class BatchFailed(ApiError):
    """An operation failed: the batch answers its status and headers."""

    def __init__(self, index: int, failure: ApiError, body: JsonValue) -> None:
        super().__init__("Batch operation failed",
                         f"Operation {index} failed: {failure.error}; nothing was kept",
                         status=failure.status, headers=failure.headers)
        self.index = index
        self.operation = body

    def body(self) -> JsonObject:
        return {"error": self.error, "details": self.details, "index": self.index,
                "operation": self.operation}


class _Operation:
    __slots__ = ("index", "method", "path", "body", "rule", "principal")

    def __init__(self, index: int, method: str, path: str, body: JsonValue) -> None:
        self.index, self.method, self.path, self.body = index, method, path, body
        self.rule: "RouteRule | None" = None
        self.principal: "Principal | None" = None


@checks("rest.batch")
@idempotent
def run_batch(ctx: Context) -> Response:
    quotas = ctx.app.quotas
    # The batch counts as one request (the app leaves it to this handler),
    # then each operation as one more: the answer's RateLimit-* are the last.
    limits = quotas.check(ctx.principal) if quotas is not None else None
    lookup = _messages(ctx)
    operations = _operations(read_json_body(ctx.request), ctx.app.settings.max_batch_operations,
                             lookup)
    for operation in operations:
        _failing(operation.index, lookup, _route, ctx, operation)
    if quotas is not None:
        for operation in operations:
            limits = _failing(operation.index, lookup, quotas.check, operation.principal)
    results: list[JsonObject] = []
    with write_transaction(ctx.app.database):
        for operation in operations:
            results.append(_run(ctx, operation, results, lookup))
    wrote(ctx.request)
    response: Response = json_response({"results": results}, headers=limits)
    return response


def _messages(ctx: Context) -> Callable[[str], str | None]:
    """The message lookup of the caller's language (as the app answers errors)."""
    locale = caller_locale(ctx.request, ctx.principal, ctx.app.settings.available_locales)
    messages = ctx.app.messages
    return lambda key: messages.text(key, locale)


def _failing(index: int, lookup: Callable[[str], str | None], step: Callable[..., T],
             *args: object) -> T:
    """``step(*args)``; its error as the failure of operation ``index``."""
    try:
        return step(*args)
    except ApiError as exc:
        raise BatchFailed(index, exc, localized_body(exc, lookup)) from None


def _operations(body: JsonValue, limit: int, lookup: Callable[[str], str | None]) -> list[_Operation]:
    """The operations of a batch body, each checked for its shape."""
    items = body.get("operations") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        raise BadRequest("Malformed request JSON data structure",
                         'The body must be a JSON object {"operations": [...]} with at least one '
                         "operation")
    if len(items) > limit:
        raise PayloadTooLarge("Too many operations", f"A batch may hold at most {limit} "
                              "operations (svc.rest.max-batch-operations)")
    return [_failing(index, lookup, _operation, index, item) for index, item in enumerate(items)]


def _operation(index: int, item: JsonValue) -> _Operation:
    def invalid(details: str) -> BadRequest:
        return BadRequest("Invalid batch operation", f"Operation {index}: {details}")

    if not isinstance(item, dict):
        raise invalid('must be a JSON object {"method", "path", "body"}')
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise invalid(f"unknown key {unknown[0]!r} (method, path and body are known)")
    method, path = item.get("method"), item.get("path")
    if method not in METHODS:
        raise invalid(f"method must be one of {', '.join(METHODS)}")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > _MAX_PATH:
        raise invalid(f"path must be a URL path starting with / (at most {_MAX_PATH} characters)")
    for reference in _REFERENCE.finditer(path + dumps_bytes(item.get("body")).decode()):
        if int(reference.group(1)) >= index:
            raise invalid(f"{reference.group(0)} does not name an earlier operation")
    return _Operation(index, method, path, item.get("body"))


def _route(ctx: Context, operation: _Operation) -> None:
    """The operation's rule and caller, as its request alone would get them."""
    path = operation.path.partition("?")[0]
    try:
        rule, _ = ctx.app.router.match(path, operation.method)
    except RouteNotFound:
        raise NotFound("Not found", f"No route {operation.method} {path}") from None
    except MethodNotAllowed:
        raise ApiError("Method not allowed", f"{operation.method} is not supported at {path}",
                       status=405) from None
    if rule.endpoint not in BATCHABLE:
        raise BadRequest("Invalid batch operation", f"{operation.method} {rule.rule} cannot run "
                         "in a batch: only creates, updates, deletes, changes by filter and "
                         "service calls (POST) can")
    operation.rule = rule
    operation.principal = ctx.app.gate.principal(
        path, ctx.request.environ.get("HTTP_AUTHORIZATION"))


def _run(ctx: Context, operation: _Operation, results: list[JsonObject],
         lookup: Callable[[str], str | None]) -> JsonObject:
    """Run one operation as its own request; its status and body."""
    request, args = _failing(operation.index, lookup, _request, ctx, operation, results)
    rule, principal = operation.rule, operation.principal
    assert rule is not None and principal is not None       # _route set them
    failure: list[ApiError] = []

    def answer(request: Request) -> Response:
        request.principal = principal
        request.route = rule.rule
        try:
            response: Response = rule.endpoint(Context(ctx.app, request, principal), **args)
        except ApiError as exc:
            request.error = exc.error
            failure.append(exc)
            response = error_response(exc, lookup)
        return response

    observer = ctx.app.observer
    response = answer(request) if observer is None else observer.observe(answer, request)
    if failure:
        raise BatchFailed(operation.index, failure[0], localized_body(failure[0], lookup))
    return {"status": response.status_code, "body": _answer_body(response)}


def _answer_body(response: Response) -> JsonValue:
    """An operation's answer as the batch's answer holds it: JSON as JSON,
    text as a string, nothing as null."""
    data = response.get_data(as_text=True)
    if not data:
        return None
    return loads(data) if response.mimetype == "application/json" else data


def _request(ctx: Context, operation: _Operation,
             results: list[JsonObject]) -> tuple[Request, Arguments]:
    """The operation's request and its route's arguments: its method, path
    and body (references to earlier answers put in), the batch's token,
    language and address."""
    path, _, query = operation.path.partition("?")
    path = _REFERENCE.sub(lambda ref: quote(str(_answered_id(results, ref)), safe=""), path)
    body = _resolved(operation.body, results)
    environ = EnvironBuilder(
        path=path, method=operation.method, query_string=query,
        data=None if body is None else dumps_bytes(body),
        content_type=None if body is None else "application/json",
        base_url=ctx.request.host_url).get_environ()
    environ.update({key: ctx.request.environ[key] for key in _INHERITED
                    if key in ctx.request.environ})
    request = Request(environ)
    limit_body(request, ctx.app.settings.max_request_size)
    try:
        rule, args = ctx.app.router.match(request.path, request.method)
    except (RouteNotFound, MethodNotAllowed):
        rule, args = None, {}
    if rule is not operation.rule:      # an id put in the path that reads as a static segment
        raise BadRequest("Invalid batch operation", f"{request.method} {request.path} names "
                         "another route once its references are put in")
    return request, args


def _resolved(value: JsonValue, results: list[JsonObject]) -> JsonValue:
    """``value`` with its ``${n.id}`` references replaced by those ids."""
    if isinstance(value, str):
        whole = _REFERENCE.fullmatch(value)
        if whole is not None:
            return _answered_id(results, whole)
        return _REFERENCE.sub(lambda ref: str(_answered_id(results, ref)), value)
    if isinstance(value, list):
        return [_resolved(item, results) for item in value]
    if isinstance(value, dict):
        return {key: _resolved(item, results) for key, item in value.items()}
    return value


def _answered_id(results: list[JsonObject], reference: "re.Match[str]") -> JsonValue:
    index = int(reference.group(1))
    body = results[index]["body"]
    if not isinstance(body, dict) or body.get("id") is None:
        raise BadRequest("Invalid batch operation", f"{reference.group(0)}: operation {index} "
                         "answered no id (only an operation answering one entity has one)")
    return body["id"]


rules = [Rule("/rest/batch", methods=["POST"], endpoint=run_batch)]
