"""The authorization server endpoints under /oauth2."""
from werkzeug.routing import Rule

from ..errors import OAuthError
from ..web import json_response

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def read_form(request):
    """Form parameters as a plain dict; RFC 6749 3.2 forbids repeating one."""
    if not request.content_length and not request.mimetype:
        return {}
    if request.mimetype != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request",
                         "Send the parameters as application/x-www-form-urlencoded")
    form = {}
    for key, values in request.form.lists():
        if len(values) > 1:
            raise OAuthError("invalid_request", f"OAuth 2.0 Parameter {key} is repeated")
        form[key] = values[0]
    return form


def token(ctx):
    body = ctx.app.authserver.token(read_form(ctx.request), ctx.request.headers.get("Authorization"))
    return json_response(body, headers=NO_STORE)


rules = [
    Rule("/oauth2/token", methods=["POST"], endpoint=token),
]
