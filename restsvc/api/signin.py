"""The browser side of the authorization server: ``/oauth2/authorize`` (the
sign-in page, security/authorize.py) and the metadata document (RFC 8414)."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..errors import OAuthError
from ..security.authorize import FORM_TTL, PARAMETERS, PageError, Redirect
from ..security.signinpage import STYLESHEET
from ..web import NO_STORE, base_url, json_response
from .oauth import read_form

if TYPE_CHECKING:
    from ..security.authorize import AuthorizationRequest
    from ..web import Context

COOKIE = "restsvc_signin"
PAGE_HEADERS = {
    **NO_STORE,
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
STYLESHEET_BODY = STYLESHEET.read_bytes()


def _page(ctx: "Context", status: int = 200, error: str | None = None,
          request: "AuthorizationRequest | None" = None, username: str = "",
          headers: dict[str, str] | None = None) -> Response:
    """The sign-in page (``request``: an authorization request, shown as a
    form) in the language of Accept-Language."""
    app, http = ctx.app, ctx.request
    locale = http.accept_languages.best_match(app.settings.available_locales) \
        or app.settings.default_locale
    nonce: str | None = None
    form_token: str | None = None
    if request:
        nonce = app.authorizer.nonce(http.cookies.get(COOKIE))
        form_token = app.authorizer.form_token(request, nonce)
    auth = http.root_path + app.settings.paths.auth
    body = app.signin_page.render(locale, auth, error, form_token,
                                  client=request.client_id if request else "", username=username)
    response = Response(body, status=status, content_type="text/html;charset=UTF-8",
                        headers={**PAGE_HEADERS, **(headers or {})})
    if nonce:
        response.set_cookie(COOKIE, nonce, max_age=FORM_TTL, path=f"{auth}/authorize",
                            secure=http.scheme == "https", httponly=True, samesite="Strict")
    return response


def _redirect(location: str) -> Response:
    return Response(status=303, headers={**NO_STORE, "Location": location})


def authorize(ctx: "Context") -> Response:
    """``GET /oauth2/authorize``: check the request, then show the form."""
    args = ctx.request.args
    params = {name: value for name in PARAMETERS if (value := args.get(name)) is not None}
    repeated = [name for name in PARAMETERS if len(args.getlist(name)) > 1]
    try:
        request = ctx.app.authorizer.check(params, repeated, _issuer(ctx))
    except PageError as exc:
        return _page(ctx, exc.status, exc.key)
    except Redirect as exc:
        return _redirect(exc.location)
    return _page(ctx, request=request)


def sign_in(ctx: "Context") -> Response:
    """``POST /oauth2/authorize``: the form; a code for the client, or the form again."""
    authorizer, issuer = ctx.app.authorizer, _issuer(ctx)
    try:
        form = read_form(ctx.request)
    except OAuthError:
        return _page(ctx, 400, "request")
    request = None
    try:
        request = authorizer.from_form(form.get("request"), ctx.request.cookies.get(COOKIE),
                                       issuer)
        location = authorizer.sign_in(request, form.get("username"), form.get("password"),
                                      ctx.request.remote_addr, issuer)
    except PageError as exc:
        return _page(ctx, exc.status, exc.key, request if exc.form else None,
                     username=form.get("username") or "", headers=exc.headers)
    except Redirect as exc:
        return _redirect(exc.location)
    return _redirect(location)


def stylesheet(ctx: "Context") -> Response:
    return Response(STYLESHEET_BODY, content_type="text/css;charset=UTF-8",
                    headers={"Cache-Control": "public, max-age=3600"})


stylesheet.undocumented = True  # type: ignore[attr-defined]  # the page's file, not an operation


def _issuer(ctx: "Context") -> str:
    return base_url(ctx.request, ctx.app.settings.public_url)


def server_metadata(ctx: "Context") -> Response:
    return json_response(ctx.app.authserver.metadata(_issuer(ctx), ctx.app.settings.paths.auth))


rules = [
    Rule("/oauth2/authorize", methods=["GET"], endpoint=authorize),
    Rule("/oauth2/authorize", methods=["POST"], endpoint=sign_in),
    Rule("/oauth2/signin.css", methods=["GET"], endpoint=stylesheet),
    Rule("/.well-known/oauth-authorization-server", methods=["GET"], endpoint=server_metadata),
]
