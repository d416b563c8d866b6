"""The change feed over HTTP (restsvc/events/feed.py has the logic).

    GET  /rest/events           the stream, bearer token in the header (``filter``:
                                a search filter's JSON, with one ``entity``)
    POST /rest/events/tickets   a short-lived stream ticket for a browser
    GET  /rest/events/stream    the stream, opened with ``?ticket=`` (EventSource
                                cannot send headers; the URL never holds a token)
"""
from collections.abc import Callable
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..data.access import access_for
from ..errors import ApiError, BadRequest, Forbidden, Unauthorized
from ..events.feed import Stream, last_event_id, stream_filter, subscribed
from ..idempotency import caller_of
from .entities import json_arg
from ..security.gate import Principal
from ..security.scopes import checks
from ..web import NO_STORE, json_response

if TYPE_CHECKING:
    from ..data.access import Access
    from ..web import Context

_STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@checks("rest.events.read")
def stream(ctx: "Context") -> Response:
    gate, path = ctx.app.gate, ctx.request.path
    authorization = ctx.request.headers.get("Authorization")

    def recheck() -> bool:
        try:
            return gate.principal(path, authorization) is not gate.anonymous_principal
        except ApiError:
            return False
    # ctx.access: a global caller acting for a tenant (X-Tenant-Id) follows that tenant's rows.
    return _open(ctx, ctx.principal, recheck, ctx.access)


@checks("rest.events.read")
def ticket_stream(ctx: "Context") -> Response:
    app = ctx.app
    token_hash = app.event_tickets.token_hash(ctx.request.args.get("ticket") or "")
    principal = app.gate.principal_of_hash(token_hash) if token_hash else None
    if principal is None or token_hash is None:
        raise Unauthorized(app.settings.realm, "invalid_token",
                           "The stream ticket is invalid or expired, or its token is")
    known = token_hash      # a str here; a lambda does not keep that narrowing
    return _open(ctx, principal, lambda: app.gate.principal_of_hash(known) is not None,
                 access_for(app, principal))


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


def _open(ctx: "Context", principal: Principal, recheck: Callable[[], bool],
          access: "Access") -> Response:
    app, request = ctx.app, ctx.request
    _require_rest(principal)
    names = request.args.getlist("entity")
    metas = subscribed(app.metadata, principal.permissions, names)
    text = request.args.get("filter")
    matcher = stream_filter(names, metas, None if text is None else json_arg(text, "filter"),
                            access)
    after = last_event_id(request.headers.get("Last-Event-ID")
                          or request.args.get("lastEventId"))
    caller = caller_of(principal)
    app.event_streams.take(caller)
    try:
        body = Stream(app, access, metas, recheck, after, matcher)
    except BaseException:
        app.event_streams.give(caller)      # the place is not held by a stream that never opened
        raise
    response = Response(iter(body), status=200, mimetype="text/event-stream",
                        headers=_STREAM_HEADERS)
    response.call_on_close(lambda: app.event_streams.give(caller))
    instruments = app.instruments
    if instruments is not None:
        instruments.event_streams.inc()
        response.call_on_close(lambda: instruments.event_streams.inc(amount=-1))
    return response


rules = [
    Rule("/rest/events", methods=["GET"], endpoint=stream),
    Rule("/rest/events/tickets", methods=["POST"], endpoint=ticket),
    Rule("/rest/events/stream", methods=["GET"], endpoint=ticket_stream),
]
