"""The gate: which paths need a bearer token, and who is calling.

Patterns are Ant-style (``?`` one character, ``*`` within a segment, ``**``
any number of segments), compiled once into one regular expression per list.
Anonymous patterns win over authenticated ones. A token is read only from
the ``Authorization`` header, never from the URL.

A token's principal is kept for ``RECHECK_SECONDS`` after its database read
(never past the token's expiry): a client's requests in that time cost a
keyed hash and a dict lookup instead of a query. A token revoked, expired or
whose user is disabled is therefore refused within that time on every
instance (at once on the instance that revoked it: ``TokenStore.changes``);
the permissions come from the token's roles, so nothing about them outlives it.
"""
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import Forbidden, Text, Unauthorized
from ..paths import Paths
from ..settings import Settings
from ..values import SettingsError
from .apikeys import KeyStore, is_key
from .registry import RoleRegistry
from .roles import Permissions
from .tenants import TenantDirectory
from .tokens import ACCESS, Identity, TokenStore

if TYPE_CHECKING:
    from .jwtissuers import JwtIssuers      # needs the optional jwt extra (PyJWT)

Handler = TypeVar("Handler", bound=Callable[..., Any])


def needs_token(handler: Handler) -> Handler:
    """Mark a handler that asks for a bearer token itself (401 without one) on
    a path the gate lets through without one: the OpenAPI documents then list
    the bearer schemes for its routes, as for the paths the gate protects."""
    setattr(handler, "needs_token", True)  # noqa: B010 -- a function's attribute
    return handler


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated parts, the first a JSON header: never one of ours."""
    return token.startswith("eyJ") and token.count(".") == 2

RECHECK_SECONDS = 0.5
_RECENT_MAX = 10_000        # principals kept at most (then forgotten all at once)


def ant_to_regex(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")       # /rest/** also matches /rest
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def compile_patterns(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile(_alternatives(patterns))


def _alternatives(patterns: Sequence[str]) -> str:
    # The end anchor holds for every alternative, not only the last one.
    return "(?:" + "|".join(f"(?:{ant_to_regex(p)})" for p in patterns) + r")\Z"


def protection_pattern(authenticated: Sequence[str], anonymous: Sequence[str]
                       ) -> re.Pattern[str] | None:
    """One expression for ``Gate.is_protected``: its group ``protected``
    matches a path that needs a token (an authenticated pattern matches, no
    anonymous one does: the anonymous alternative comes first and wins)."""
    if not authenticated:
        return None
    if not anonymous:
        return re.compile(f"(?P<protected>{_alternatives(authenticated)})")
    return re.compile(f"(?P<anonymous>{_alternatives(anonymous)})|"
                      f"(?P<protected>{_alternatives(authenticated)})")


def rest_enabled_patterns(paths: Paths) -> re.Pattern[str]:
    """The paths that need the specific policy rest.enabled (reference 1.2)."""
    return re.compile(_alternatives((
        *(f"{paths.rest(part)}/**" for part in ("entities", "services", "queries", "messages",
                                                 "metadata", "files")),
        paths.rest("user_info"), paths.rest("permissions"),
        paths.rest("user_session"), f"{paths.rest('user_session')}/locale",
        paths.rest("events"), f"{paths.rest('events')}/tickets",
        paths.rest("webhooks"), f"{paths.rest('webhooks')}/**", paths.rest("batch"),
        paths.rest("api_keys"), f"{paths.rest('api_keys')}/*")))


def docs_page_patterns(paths: Paths) -> tuple[str, str]:
    """The documentation page and its files are open to everyone: they hold no
    data, and the page is where a person signs in. The documents stay behind the token."""
    docs = paths.rest("docs")
    return docs, f"{docs}/assets/*"


def ticket_stream_patterns(paths: Paths) -> tuple[str]:
    """A change feed opened by a browser with a stream ticket: the handler checks
    the ticket and the token it names (api/events.py)."""
    return (f"{paths.rest('events')}/stream",)


@dataclass(frozen=True)
class Principal:
    client_id: str | None  # None for the anonymous caller
    username: str          # the user, or the client id for client-credentials tokens
    is_user: bool
    locale: str | None     # the caller's own locale, None when it has none
    permissions: Permissions
    token_hash: str | None = None
    user_id: str | None = None    # the User's id (a string) for user tokens
    stored: bool = True    # a token of this service (not an identity provider's JWT)
    # An identity provider's JWT: who the caller is there (its iss and sub).
    # Its username may be anyone's, a local user's too: it names nothing kept here.
    issuer: str | None = None
    subject: str | None = None
    key_id: str | None = None     # called with an API key (security/apikeys.py): its id
    tenant: str | None = None     # the tenant it acts for (security/tenants.py); None: global

    @property
    def identity(self) -> str | None:
        """Who the caller is, for what is kept per caller (Idempotency-Key
        answers, quota buckets): this service's user or client, or the
        issuer's subject; None for the anonymous caller."""
        if self.issuer is not None:
            return f"jwt:{json.dumps([self.issuer, self.subject])}"
        if self.is_user and self.username:
            return f"user:{self.username}"
        if self.client_id:
            return f"client:{self.client_id}"
        return None


# A principal read from the database, kept for RECHECK_SECONDS: (monotonic
# time of the read, the token's expiry in epoch seconds, TokenStore.changes
# then, the principal).
_Recent = tuple[float, float, int, Principal]


class Gate:
    def __init__(self, settings: Settings, tokens: TokenStore, roles: RoleRegistry,
                 jwt_issuers: "JwtIssuers | None" = None, keys: KeyStore | None = None,
                 tenants: TenantDirectory | None = None) -> None:
        self.realm = settings.realm
        self.tokens = tokens
        self.keys = keys        # API keys: tokens that start with apikeys.PREFIX
        self.roles = roles
        self.tenants = tenants      # whose tenant a token acts for (None: no tenants)
        self.available_locales = settings.available_locales
        # security/jwtissuers.py, when svc.resource-server.jwt.* names issuers
        self.jwt_issuers = jwt_issuers
        self._protection = protection_pattern(
            settings.authenticated_url_patterns,
            (*settings.anonymous_url_patterns, *docs_page_patterns(settings.paths),
             *ticket_stream_patterns(settings.paths)))
        self.rest_enabled = rest_enabled_patterns(settings.paths)
        entities = f"{settings.paths.rest('entities')}/x"
        if not settings.paths.is_default and not self.is_protected(entities):
            raise SettingsError(
                f"svc.rest.base-path: {settings.paths.base} is not protected by "
                f"svc.resource-server.authenticated-url-patterns (add {settings.paths.base}/**)")
        self.anonymous_principal = Principal(None, "anonymous", False, None,
                                             roles.permissions(()))
        # token hash -> (read at, expires at, changes, principal)
        self._recent: dict[str, _Recent] = {}

    def is_protected(self, path: str) -> bool:
        if self._protection is None:
            return False
        found = self._protection.match(path)
        return found is not None and found.lastgroup == "protected"

    def principal(self, path: str, authorization: str | None) -> Principal:
        """The caller of a request, or raise 401/403. Unprotected paths get the
        anonymous principal unless a valid token is sent anyway."""
        protected = self.is_protected(path)
        token = None
        if authorization and authorization[:7].lower() == "bearer ":
            token = authorization[7:].strip()
        if not token:
            if protected:
                raise Unauthorized(self.realm, "invalid_token",
                                   "Full authentication is required: send Authorization: Bearer <token>")
            return self.anonymous_principal
        principal = self._token_principal(token)
        if principal is None:
            if protected:
                raise Unauthorized(self.realm, "invalid_token",
                                   "The access token is invalid, expired or revoked")
            return self.anonymous_principal
        if protected and self.rest_enabled.match(path) \
                and not principal.permissions.specific("rest.enabled"):
            raise Forbidden("Forbidden", Text("restNotAllowed",
                                                "User is not allowed to use the REST API"))
        return principal

    def _token_principal(self, token: str) -> Principal | None:
        """The principal of a live access token, or None."""
        is_jwt = self.jwt_issuers is not None and looks_like_jwt(token)
        if len(token) > 512 and not is_jwt:
            return None
        token_hash = self.tokens.hash(token)
        now, changes = time.monotonic(), self.tokens.changes
        recent = self._recent_principal(token_hash, now, changes)
        if recent is not None:
            return recent
        if is_jwt:
            return self._jwt_principal(token, token_hash, now, changes)
        if self.keys is not None and is_key(token):
            found = self._key_principal(self.keys, token_hash, now, changes)
            if found is not None:
                return found
        return self._stored_principal(token_hash, now, changes)

    def principal_of_hash(self, token_hash: str) -> Principal | None:
        """The principal of a live access token issued here, by its hash (a
        change feed's stream ticket names the token so), or None."""
        now, changes = time.monotonic(), self.tokens.changes
        recent = self._recent_principal(token_hash, now, changes)
        if recent is not None and recent.stored:
            return recent
        found = self._stored_principal(token_hash, now, changes)
        if found is None and self.keys is not None:
            found = self._key_principal(self.keys, token_hash, now, changes)
        return found

    def _recent_principal(self, token_hash: str, now: float, changes: int) -> Principal | None:
        recent = self._recent.get(token_hash)
        if recent is not None and recent[0] > now - RECHECK_SECONDS and recent[2] == changes \
                and recent[1] > time.time():
            return recent[3]
        return None

    def _stored_principal(self, token_hash: str, now: float, changes: int) -> Principal | None:
        info = self.tokens.find_hash(token_hash)
        if info is None or info.kind != ACCESS:
            self._recent.pop(token_hash, None)
            return None
        # The locale is copied into the token at issue time (and kept in step by
        # User.after_save), so a user token costs no extra query.
        principal = self._principal(info.identity, info.token_hash)
        if principal is None:
            return None
        self._remember(token_hash, (now, info.expires_at, changes, principal))
        return principal

    def _key_principal(self, keys: KeyStore, token_hash: str, now: float,
                       changes: int) -> Principal | None:
        """The principal of a live API key, or None."""
        info = keys.find_hash(token_hash)
        if info is None:
            return None
        principal = self._principal(info.identity, token_hash, info.key_id)
        if principal is None:
            return None
        self._remember(token_hash, (now, info.expires_at, changes, principal))
        return principal

    def _principal(self, who: Identity, token_hash: str,
                   key_id: str | None = None) -> Principal | None:
        """The principal of an identity, or None when its tenant is disabled."""
        usable, tenant = self.tenants.tenant_of(who) if self.tenants else (True, None)
        if not usable:
            self._recent.pop(token_hash, None)
            return None
        return Principal(
            client_id=who.client_id, username=who.username or who.client_id,
            is_user=who.username is not None, locale=who.locale,
            permissions=self.roles.permissions(who.resource_roles, who.row_level_roles, who.scope),
            token_hash=token_hash, user_id=who.user_id, key_id=key_id, tenant=tenant)

    def _remember(self, token_hash: str, entry: "_Recent") -> None:
        if len(self._recent) >= _RECENT_MAX:
            self._recent.clear()
        self._recent[token_hash] = entry

    def _jwt_principal(self, token: str, token_hash: str, now: float,
                       changes: int) -> Principal | None:
        """The principal of a valid JWT of a configured issuer, or None."""
        assert self.jwt_issuers is not None     # only a token that looks like a JWT of one
        claims = self.jwt_issuers.claims(token)
        if claims is None:
            self._recent.pop(token_hash, None)
            return None
        usable, tenant = self.tenants.claimed(claims.tenant) if self.tenants and \
            self.tenants.active else (True, None)
        if not usable:
            self._recent.pop(token_hash, None)
            return None
        resource, row_level = self.roles.split(claims.role_codes)
        principal = Principal(
            client_id=claims.client_id, username=claims.username, is_user=True,
            locale=claims.locale if claims.locale in self.available_locales else None,
            permissions=self.roles.permissions(resource, row_level), token_hash=token_hash,
            stored=False, issuer=claims.issuer, subject=claims.subject, tenant=tenant)
        self._remember(token_hash, (now, claims.expires_at, changes, principal))
        return principal
