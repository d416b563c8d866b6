"""The authorization endpoint (RFC 6749 4.1.1-4.1.2, RFC 7636) and its
sign-in form, framework-free.

An authorization request is checked in the order RFC 6749 4.1.2.1 asks:
first the client and its redirect URI, whose errors are shown on the page
(a redirect would hand the browser to an address nobody vouched for), then
everything else, whose errors go back to the client's redirect URI.

The form carries the checked request signed (itsdangerous) together with a
nonce that the browser also holds in a cookie: a form posted from another
site, or after ``FORM_TTL``, or with a request changed in between, is
refused. A sign-in is an attempt under the sign-in limits (ratelimit.py),
counted per user like the password grant; a failure says the same whether
the user exists or not.
"""
import hmac
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import NamedTuple, NoReturn
from urllib.parse import urlencode, urlsplit

from itsdangerous import BadSignature, URLSafeTimedSerializer

from ..errors import OAuthError
from ..settinggroups import ClientSettings
from ..values import is_plain_uri
from .authcodes import CHALLENGE
from .authserver import AuthServer, granted_scope
from .users import User, lookup_name

FORM_TTL = 600                  # seconds a sign-in form stays valid
NONCE_LENGTH = 43               # secrets.token_urlsafe(32)
LOOPBACK_HOSTS = ("127.0.0.1", "::1")
PARAMETERS = ("response_type", "client_id", "redirect_uri", "scope", "state",
              "code_challenge", "code_challenge_method")


class PageError(Exception):
    """Shown on the sign-in page, never redirected. ``key``: the message
    (``restsvc.signin.error.<key>``); ``form``: whether the form is shown again."""

    def __init__(self, key: str, status: int = 400, headers: dict[str, str] | None = None,
                 form: bool = False) -> None:
        super().__init__(key)
        self.key = key
        self.status = status
        self.headers = headers or {}
        self.form = form


class Redirect(Exception):
    """An answer that sends the browser back to the client (a code or an error)."""

    def __init__(self, location: str) -> None:
        super().__init__("redirect")
        self.location = location


@dataclass(frozen=True)
class AuthorizationRequest:
    client_id: str
    redirect_uri: str       # as sent ("" when left out)
    target: str             # where the answer goes
    scope: str | None       # None: the client has no registered scopes
    state: str | None
    code_challenge: str


class _SignedForm(NamedTuple):
    """What the sign-in form carries signed: the request as checked (a JSON
    array in this order) and the browser's nonce."""
    client_id: str
    redirect_uri: str
    scope: str | None
    state: str | None
    code_challenge: str
    nonce: str


def redirect_uri_matches(registered: str, given: str) -> bool:
    """Exact match, except that a loopback IP literal matches at any port
    (RFC 8252 7.3); ``localhost`` is a name, not a loopback literal. Only a
    URI that is exactly what its parsed form says matches (no control
    characters or spaces, which the parser would drop and the redirect keep)."""
    if not is_plain_uri(given):
        return False
    if given == registered:
        return True
    want, got = urlsplit(registered), urlsplit(given)
    if want.scheme != "http" or want.hostname not in LOOPBACK_HOSTS:
        return False
    try:
        got.port        # noqa: B018 -- ValueError: not a port
    except ValueError:
        return False
    return (got.scheme == "http" and got.hostname == want.hostname and "@" not in got.netloc
            and got.path == want.path and got.query == want.query and not got.fragment)


def with_query(uri: str, params: Mapping[str, str | None]) -> str:
    """``uri`` with ``params`` (None values left out) added to its query."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{uri}{'&' if urlsplit(uri).query else '?'}{query}"


class Authorizer:
    def __init__(self, authserver: AuthServer, secret_key: str) -> None:
        self.authserver = authserver
        self.clients = authserver.clients
        self._signer = URLSafeTimedSerializer(secret_key, salt="restsvc.signin-form")

    def _target(self, params: Mapping[str, str]) -> tuple[ClientSettings, str]:
        """The client and the redirect URI to answer to, or a PageError."""
        client = self.clients.get(params.get("client_id") or "")
        if client is None or not client.redirect_uris:
            raise PageError("client")
        given = params.get("redirect_uri") or ""
        if not given and len(client.redirect_uris) == 1:
            return client, client.redirect_uris[0]
        if given and any(redirect_uri_matches(uri, given) for uri in client.redirect_uris):
            return client, given
        raise PageError("redirect")

    def check(self, params: Mapping[str, str], repeated: Collection[str],
              issuer: str) -> AuthorizationRequest:
        """The authorization request of ``params`` (a dict; ``repeated``: names
        sent more than once), or raise PageError or Redirect (an error)."""
        if {"client_id", "redirect_uri"} & set(repeated):
            raise PageError("request")
        client, target = self._target(params)
        state = params.get("state")

        def refuse(error: str, description: str) -> NoReturn:
            raise Redirect(with_query(target, {"error": error, "error_description": description,
                                               "state": state, "iss": issuer}))
        if repeated:
            refuse("invalid_request", f"Parameter {sorted(repeated)[0]} is repeated")
        if params.get("response_type") != "code":
            refuse("unsupported_response_type" if params.get("response_type") else
                   "invalid_request", "response_type must be code")
        if "authorization_code" not in client.grant_types:
            refuse("unauthorized_client", "The client may not use the authorization code grant")
        if not params.get("code_challenge"):
            refuse("invalid_request", "code_challenge is required (PKCE with S256)")
        if params.get("code_challenge_method") != "S256":
            refuse("invalid_request", "code_challenge_method must be S256")
        if not CHALLENGE.match(params["code_challenge"]):
            refuse("invalid_request", "code_challenge is not an S256 challenge")
        try:
            scope = granted_scope(client, params.get("scope"))
        except OAuthError as exc:
            refuse(exc.error, exc.details)
        return AuthorizationRequest(client.client_id, params.get("redirect_uri") or "", target,
                                    scope, state, params["code_challenge"])

    @staticmethod
    def nonce(cookie: str | None) -> str:
        """The browser's sign-in nonce: the one it holds, or a new one."""
        if cookie and len(cookie) == NONCE_LENGTH and cookie.isascii():
            return cookie
        return secrets.token_urlsafe(32)

    def form_token(self, request: AuthorizationRequest, nonce: str) -> str:
        return self._signer.dumps(list(_SignedForm(
            request.client_id, request.redirect_uri, request.scope, request.state,
            request.code_challenge, nonce)))

    def from_form(self, token: str | None, cookie: str | None, issuer: str) -> AuthorizationRequest:
        """The authorization request a posted form carries, checked again."""
        try:
            form = _SignedForm._make(self._signer.loads(token or "", max_age=FORM_TTL))
        except (BadSignature, ValueError, TypeError):      # TypeError: not 6 values
            raise PageError("expired") from None
        if not cookie or not hmac.compare_digest(form.nonce.encode(), cookie.encode()):
            raise PageError("expired")
        params = {"response_type": "code", "client_id": form.client_id,
                  "redirect_uri": form.redirect_uri, "scope": form.scope, "state": form.state,
                  "code_challenge": form.code_challenge, "code_challenge_method": "S256"}
        return self.check({k: v for k, v in params.items() if v is not None}, (), issuer)

    def sign_in(self, request: AuthorizationRequest, username: str | None, password: str | None,
                address: str | None, issuer: str) -> str:
        """The redirect URI with a new code, or PageError (the form again)."""
        if not username or not password:
            raise PageError("failed", form=True)
        name, given = lookup_name(username), password
        users = self.authserver.users
        try:
            user: User = self.authserver.limited("user", name, address,
                                                 lambda: users.authenticate(name, given),
                                                 OAuthError("invalid_grant", "Bad credentials"))
        except OAuthError as exc:
            raise PageError("limited" if exc.status == 429 else "failed",
                            status=exc.status, headers=exc.headers, form=True) from None
        code = self.authserver.codes.issue(request.client_id, request.redirect_uri,
                                           request.code_challenge, user.id, request.scope)
        return with_query(request.target, {"code": code, "state": request.state, "iss": issuer})
