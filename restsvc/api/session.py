"""User Session API: who is calling, what may they do, and the session's
locale (``PUT /rest/user-session/locale``).

A token's session is its sign-in: the access token, the refresh token it came
with and the tokens refreshed from that (for a client-credentials token, the
token alone). Its locale starts as the user's (a client's: none, so the
default) and is kept in the token store, so every instance sees a change
within the gate's recheck time (at once on the instance that made it)."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import read_json_body
from ..errors import ApiError
from ..web import NO_STORE, json_response

if TYPE_CHECKING:
    from ..web import Context


def _session_locale(ctx: "Context") -> str:
    """The caller's own locale as the service applies it (not Accept-Language):
    the session's when it is an available one, else the default."""
    locale, settings = ctx.principal.locale, ctx.app.settings
    return locale if locale is not None and locale in settings.available_locales \
        else settings.default_locale


def user_info(ctx: "Context") -> Response:
    principal = ctx.principal
    attributes = ctx.app.users.info(principal.user_id) if principal.is_user else {}
    return json_response({"username": principal.username, "locale": _session_locale(ctx),
                          "attributes": attributes})


def permissions(ctx: "Context") -> Response:
    return json_response(ctx.permissions.to_json())


def user_session(ctx: "Context") -> Response:
    """The caller's session: its name and locale."""
    return json_response({"username": ctx.principal.username, "locale": _session_locale(ctx)},
                         headers=NO_STORE)


def _refused(details: str) -> ApiError:
    return ApiError("Could not change user session locale", details, status=422)


def set_locale(ctx: "Context") -> Response:
    """Set the session's locale: ``{"locale": "de"}`` in the body, or (as the
    reference's clients send it) the language of ``Accept-Language``."""
    request, available = ctx.request, ctx.app.settings.available_locales
    body = read_json_body(request, max_bytes=1024) if request.content_length else None
    if body is not None:
        if not isinstance(body, dict) or not isinstance(body.get("locale"), str):
            raise _refused('The body must be {"locale": "<language>"}')
        wanted = body["locale"]
        locale = wanted if wanted in available else None
    else:
        wanted = request.headers.get("Accept-Language", "")
        locale = request.accept_languages.best_match(available)
    if not locale:
        raise _refused(f"Locale {wanted[:40]!r} is not one of the available locales "
                       f"({', '.join(available)})" if wanted else
                       'Name the locale: {"locale": "<language>"} or Accept-Language')
    token_hash = ctx.principal.token_hash
    if token_hash is None or not ctx.app.tokens.set_locale(token_hash, locale):
        # No token, or one of an identity provider: its claims carry the locale.
        raise _refused("Only a token of this service's own has a session whose locale "
                       "can change")
    return json_response({"username": ctx.principal.username, "locale": locale},
                         headers=NO_STORE)


rules = [
    Rule("/rest/userInfo", methods=["GET"], endpoint=user_info),
    Rule("/rest/permissions", methods=["GET"], endpoint=permissions),
    Rule("/rest/user-session", methods=["GET"], endpoint=user_session),
    Rule("/rest/user-session/locale", methods=["PUT"], endpoint=set_locale),
]
