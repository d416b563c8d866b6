"""The change feed over HTTP (restsvc/events/feed.py has the logic).

    GET  /rest/events           the stream, bearer token in the header (``filter``:
                                a search filter's JSON, with one ``entity``)
    POST /rest/events/tickets   a short-lived stream ticket for a browser
    GET  /rest/events/stream    the stream, opened with ``?ticket=`` (EventSource
                                cannot send headers; the URL never holds a token)
"""
import socket
import ssl
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..data.access import access_for
from ..errors import ApiError, BadRequest, Forbidden, Unauthorized
from ..events import streamproc
from ..events.feed import RETRY, Stream, StreamSlots, last_event_id, starting, stream_filter, subscribed
from ..events.hub import Subscriber
from ..events.matching import Matcher
from ..idempotency import caller_of
from .entities import json_arg
from ..security.gate import Principal
from ..security.scopes import checks
from ..web import NO_STORE, error_response, json_response

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from ..data.access import Access
    from ..model.metadata import MetaClass
    from ..parts import AppParts
    from ..web import Context

_STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@checks("rest.events.read")
def stream(ctx: "Context") -> Response:
    principal = ctx.principal
    # A global caller acting for a tenant (X-Tenant-Id, checked by ctx.access) follows its rows.
    acting = None if principal.tenant is not None else ctx.access.tenant
    return _open(ctx, principal, {"authorization": ctx.request.headers.get("Authorization"),
                                  "actingFor": acting})


@checks("rest.events.read")
def ticket_stream(ctx: "Context") -> Response:
    app = ctx.app
    token_hash = app.event_tickets.token_hash(ctx.request.args.get("ticket") or "")
    principal = app.gate.principal_of_hash(token_hash) if token_hash else None
    if principal is None or token_hash is None:
        raise Unauthorized(app.settings.realm, "invalid_token",
                           "The stream ticket is invalid or expired, or its token is")
    return _open(ctx, principal, {"tokenHash": token_hash})


@checks("rest.events.read")
def ticket(ctx: "Context") -> Response:
    app, principal = ctx.app, ctx.principal
    _require_rest(principal)
    if not principal.stored or principal.token_hash is None \
            or app.gate.principal_of_hash(principal.token_hash) is None:
        raise BadRequest("No stream ticket", "Stream tickets are issued for access tokens "
                                             "of this service only")
    return json_response({"ticket": app.event_tickets.issue(principal.token_hash),
                          "expiresIn": app.event_tickets.lifetime}, headers=NO_STORE)


def _require_rest(principal: Principal) -> None:
    """The feed and its tickets read: a token needs ``rest.enabled`` and, with
    scopes, the scope read (security/scopes.py)."""
    permissions = principal.permissions
    if not permissions.specific("rest.enabled"):
        raise Forbidden("Forbidden", "User is not allowed to use the REST API")
    if not permissions.specific("rest.events.read"):
        raise Forbidden("Forbidden", "The change feed needs the scope read")


def _open(ctx: "Context", principal: Principal, credential: dict[str, str | None]
          ) -> Response:
    """The stream, in this worker's thread unless the stream process takes it
    (``handed_over``); ``credential``: how the caller is rebuilt there and
    its token rechecked (the ``authorization`` header, or a ticket's ``tokenHash``)."""
    app, request = ctx.app, ctx.request
    after = last_event_id(request.headers.get("Last-Event-ID")
                          or request.args.get("lastEventId"))
    opening: dict[str, Any] = {"path": request.path, **credential, "after": after,
                               "entity": request.args.getlist("entity"),
                               "filter": request.args.get("filter")}
    prepared = _prepared(app, principal, opening)

    def opened() -> Stream:
        return Stream(app, prepared.access, prepared.metas, _recheck(app, opening), after,
                      prepared.matcher)
    body = _Body(opened, opening, app.event_streams, prepared.caller)
    if not _may_hand_over(request.environ):
        body.open()
    response = Response(body, status=200, mimetype="text/event-stream",
                        headers=_STREAM_HEADERS)
    response.call_on_close(body.close)
    instruments = app.instruments
    if instruments is not None:
        instruments.event_streams.inc()
        response.call_on_close(lambda: instruments.event_streams.inc(amount=-1))
    return response


class _Prepared(NamedTuple):
    metas: list["MetaClass"]
    access: "Access"
    matcher: Matcher | None
    caller: str | None


def _prepared(app: "AppParts", principal: Principal, opening: dict[str, Any]) -> _Prepared:
    """(entities, access, filter, caller) of a stream: the checks a worker
    makes before it opens, and the stream process again when it takes it."""
    _require_rest(principal)
    names = opening["entity"]
    metas = subscribed(app.metadata, principal.permissions, names)
    acting = opening.get("actingFor")
    access = access_for(app, principal, acting if isinstance(acting, str) else None)
    text = opening["filter"]
    matcher = stream_filter(names, metas, None if text is None else json_arg(text, "filter"),
                            access)
    return _Prepared(metas, access, matcher, caller_of(principal))


def _recheck(app: "AppParts", opening: dict[str, Any]) -> Callable[[], bool]:
    """Whether the stream's token still holds (asked every half second)."""
    gate, token_hash = app.gate, opening.get("tokenHash")
    if isinstance(token_hash, str):
        return lambda: gate.principal_of_hash(token_hash) is not None
    path, authorization = opening["path"], opening.get("authorization")

    def recheck() -> bool:
        try:
            return gate.principal(path, authorization) is not gate.anonymous_principal
        except ApiError:
            return False
    return recheck


def _credential(opening: dict[str, Any]) -> tuple[str, str] | None:
    """What the streams that share a token's recheck have in common."""
    for name in ("tokenHash", "authorization"):
        value = opening.get(name)
        if isinstance(value, str):
            return name, f"{opening.get('path')} {value}"
    return None


class _Body:
    """A stream's response body: handed over to the stream process, or
    iterated in the worker's thread (``open``: its place in the worker taken)."""

    def __init__(self, opened: Callable[[], Stream], opening: dict[str, Any],
                 slots: StreamSlots, caller: str | None) -> None:
        self.opened, self.opening, self.slots, self.caller = opened, opening, slots, caller
        self.stream: Stream | None = None

    def open(self) -> None:
        self.slots.take(self.caller)
        try:
            self.stream = self.opened()
        except BaseException:
            self.slots.give(self.caller)    # the place is not held by a stream that never opened
            raise

    def close(self) -> None:
        if self.stream is not None:
            self.stream = None
            self.slots.give(self.caller)

    def __iter__(self) -> Iterator[bytes]:
        if self.stream is None:
            self.open()
        assert self.stream is not None
        return iter(self.stream)


def _may_hand_over(environ: "WSGIEnvironment") -> bool:
    sock = environ.get("gunicorn.socket")
    return streamproc.address is not None and isinstance(sock, socket.socket) \
        and not isinstance(sock, ssl.SSLSocket)


def handed_over(environ: "WSGIEnvironment", response: Response) -> Response | None:
    """What the worker answers instead of ``response`` when the stream process
    took the stream's connection (an answer gunicorn writes into a dead
    socket), or its error; None: the worker streams it (no stream process:
    its place in the worker taken now, or its 503/429)."""
    body = response.response
    if not isinstance(body, _Body) or body.stream is not None or not _may_hand_over(environ):
        return None
    sock = environ["gunicorn.socket"]
    headers = response.get_wsgi_headers(environ).to_wsgi_list()
    head = "".join([f"HTTP/1.1 {response.status}\r\n",
                    *(f"{name}: {value}\r\n" for name, value in headers),
                    "Connection: close\r\n\r\n"])
    answer = streamproc.hand_over(sock, {**body.opening, "head": head})
    error = None
    if answer is None:
        try:
            body.open()
            return None
        except ApiError as exc:
            error = exc
    response.close()
    if error is None and answer is not None and answer.get("taken") is True:
        streamproc.forget(sock)
        return Response(status=200)
    if error is None and answer is not None:
        error = ApiError(str(answer.get("error")), str(answer.get("details")),
                         int(answer.get("status") or 503), dict(answer.get("headers") or {}))
    assert error is not None
    return error_response(error)


def reopened(app: "AppParts", message: dict[str, Any]) -> tuple[Subscriber, bytes, str | None]:
    """The stream a worker handed over, rebuilt in the stream process:
    (its subscriber, the bytes it begins with, its caller)."""
    gate, token_hash = app.gate, message.get("tokenHash")
    if isinstance(token_hash, str):
        principal = gate.principal_of_hash(token_hash)
        if principal is None:
            raise Unauthorized(app.settings.realm, "invalid_token",
                               "The stream ticket is invalid or expired, or its token is")
    else:
        principal = gate.principal(str(message["path"]), message.get("authorization"))
    prepared = _prepared(app, principal, message)
    after = message.get("after")
    start, reset = starting(app.database, after if isinstance(after, int) else None)
    sub = Subscriber(prepared.access, prepared.metas, prepared.matcher, start,
                     _recheck(app, message), app.settings.events_stream_buffer, lambda: None,
                     credential=_credential(message))
    return sub, str(message["head"]).encode("latin-1") + RETRY + (reset or b""), prepared.caller


rules = [
    Rule("/rest/events", methods=["GET"], endpoint=stream),
    Rule("/rest/events/tickets", methods=["POST"], endpoint=ticket),
    Rule("/rest/events/stream", methods=["GET"], endpoint=ticket_stream),
]
