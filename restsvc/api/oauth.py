"""The authorization server endpoints under /oauth2."""
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.routing import Rule

from ..errors import MalformedBody, OAuthError
from ..web import NO_STORE, empty_response, json_response


def read_form(request):
    """Form parameters as a plain dict; RFC 6749 3.2 forbids repeating one."""
    if not request.content_length and not request.mimetype:
        return {}
    if request.mimetype != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request",
                         "Send the parameters as application/x-www-form-urlencoded")
    try:
        parsed = request.form
    except RequestEntityTooLarge:
        raise OAuthError("invalid_request", "The request body is too large", status=413) from None
    except MalformedBody as exc:
        raise OAuthError("invalid_request", exc.details) from None
    form = {}
    for key, values in parsed.lists():
        if len(values) > 1:
            raise OAuthError("invalid_request", f"OAuth 2.0 Parameter {key} is repeated")
        form[key] = values[0]
    return form


def _call(ctx, operation):
    request = ctx.request
    return operation(read_form(request), request.headers.get("Authorization"), request.remote_addr)


def token(ctx):
    instruments = ctx.app.instruments
    if instruments is None:
        return json_response(_call(ctx, ctx.app.authserver.token), headers=NO_STORE)
    try:
        answer = _call(ctx, ctx.app.authserver.token)
    except OAuthError as exc:
        instruments.token(_grant_type(ctx.request), exc.error, getattr(exc, "limit", None))
        raise
    instruments.token(_grant_type(ctx.request))
    return json_response(answer, headers=NO_STORE)


def _grant_type(request):
    """The grant asked for, for the metrics (read from the form already parsed)."""
    try:
        return request.form.get("grant_type")
    except (RequestEntityTooLarge, MalformedBody):   # the refusal says so already
        return None


def revoke(ctx):
    _call(ctx, ctx.app.authserver.revoke)
    return empty_response(200, headers=NO_STORE)


def introspect(ctx):
    return json_response(_call(ctx, ctx.app.authserver.introspect), headers=NO_STORE)


rules = [
    Rule("/oauth2/token", methods=["POST"], endpoint=token),
    Rule("/oauth2/revoke", methods=["POST"], endpoint=revoke),
    Rule("/oauth2/introspect", methods=["POST"], endpoint=introspect),
]
