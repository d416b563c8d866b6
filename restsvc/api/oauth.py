"""The authorization server endpoints under /oauth2."""
from collections.abc import Callable
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import read_form_body
from ..errors import ApiError, OAuthError
from ..jsonio import JsonValue
from ..web import NO_STORE, empty_response, json_response

if TYPE_CHECKING:
    from ..web import Context, Request

MAX_BODY_BYTES = 16 * 1024
MAX_FIELDS = 100


def read_form(request: "Request") -> dict[str, str]:
    """Form parameters as a plain dict; RFC 6749 3.2 forbids repeating one.
    Token requests are small: a larger body, or one of more fields, is refused
    before it is parsed."""
    if not request.content_length and not request.mimetype:
        return {}
    if request.mimetype != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request",
                         "Send the parameters as application/x-www-form-urlencoded")
    try:
        pairs = read_form_body(request, MAX_BODY_BYTES, MAX_FIELDS)
    except ApiError as exc:     # too large, malformed: in the RFC 6749 form
        raise OAuthError("invalid_request", exc.details, status=exc.status) from None
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            raise OAuthError("invalid_request", f"OAuth 2.0 Parameter {key} is repeated")
        form[key] = value
    return form


def _call(ctx: "Context", operation: Callable[[dict[str, str], str | None, str | None], JsonValue],
          form: dict[str, str] | None = None) -> JsonValue:
    request = ctx.request
    if form is None:
        form = read_form(request)
    return operation(form, request.headers.get("Authorization"), request.remote_addr)


def token(ctx: "Context") -> Response:
    instruments = ctx.app.instruments
    if instruments is None:
        return json_response(_call(ctx, ctx.app.authserver.token), headers=NO_STORE)
    form: dict[str, str] = {}   # the grant asked for is counted only once the form could be read
    try:
        form = read_form(ctx.request)
        answer = _call(ctx, ctx.app.authserver.token, form)
    except OAuthError as exc:
        instruments.token(form.get("grant_type"), exc.error, getattr(exc, "limit", None))
        raise
    instruments.token(form.get("grant_type"))
    return json_response(answer, headers=NO_STORE)


def revoke(ctx: "Context") -> Response:
    _call(ctx, ctx.app.authserver.revoke)
    return empty_response(200, headers=NO_STORE)


def introspect(ctx: "Context") -> Response:
    return json_response(_call(ctx, ctx.app.authserver.introspect), headers=NO_STORE)


rules = [
    Rule("/oauth2/token", methods=["POST"], endpoint=token),
    Rule("/oauth2/revoke", methods=["POST"], endpoint=revoke),
    Rule("/oauth2/introspect", methods=["POST"], endpoint=introspect),
]
