"""Resource-server mode for JWT access tokens of existing identity providers
(``svc.resource-server.jwt.<name>.*``). Needs the ``jwt`` extra (PyJWT).

The gate takes a token for a JWT only when it looks like one
(``gate.looks_like_jwt``), so restsvc's own opaque tokens never pay for
this. The issuer is picked by the ``iss`` claim; the signature is checked
with the issuer's key chosen by ``kid`` from its JWKS document (fetched on
first use, refreshed after ``JWKS_MAX_AGE``, and again for an unknown ``kid``
at most once per ``REFETCH_SECONDS``), with only the issuer's configured
algorithms: ``none`` never, symmetric ones only with a configured secret.
``exp``, ``nbf``, ``iss`` and ``aud`` are checked with ``LEEWAY`` seconds of
clock skew. Claims become the principal: the username claim names the user
(in the canonical form of a local username, security/users.py; a name no
local user could have, with control or invisible characters, makes the token
invalid), the roles claim's values map to role codes; unmapped roles grant nothing.
"""
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import jwt
from jwt.algorithms import AllowedPublicKeys

from ..jsonio import JsonObject, JsonValue
from ..settinggroups import JwtIssuerSettings
from .users import canonical_username

log = logging.getLogger("restsvc.jwt")

LEEWAY = 60
REFETCH_SECONDS = 30
JWKS_MAX_AGE = 600
JWKS_MAX_BYTES = 1 << 20
FETCH_TIMEOUT = 5
MAX_TOKEN_LENGTH = 16 * 1024
_now = time.monotonic       # one clock for the cache (tests move it)


# Reads a JWKS document (JSON) from its address.
Fetch = Callable[[str], JsonValue]


def _fetch(uri: str) -> JsonValue:
    with urllib.request.urlopen(uri, timeout=FETCH_TIMEOUT) as answer:
        return json.loads(answer.read(JWKS_MAX_BYTES + 1)[:JWKS_MAX_BYTES])


class JwksCache:
    """An issuer's signing keys by ``kid``."""

    def __init__(self, uri: str, fetch: Fetch = _fetch) -> None:
        self.uri = uri
        self._fetch = fetch
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at: float | None = None      # monotonic time of the last attempt
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> jwt.PyJWK | None:
        keys, fetched_at, now = self._keys, self._fetched_at, _now()
        stale = fetched_at is None or now - fetched_at > JWKS_MAX_AGE
        unknown = self._find(keys, kid) is None and (
            fetched_at is None or now - fetched_at >= REFETCH_SECONDS)
        if stale or unknown:
            keys = self._refresh(fetched_at)
        return self._find(keys, kid)

    @staticmethod
    def _find(keys: dict[str | None, jwt.PyJWK], kid: str | None) -> jwt.PyJWK | None:
        if kid is None:     # a token without kid: only when the issuer has one key
            return next(iter(keys.values())) if len(keys) == 1 else None
        return keys.get(kid)

    def _refresh(self, seen: float | None) -> dict[str | None, jwt.PyJWK]:
        with self._lock:
            if self._fetched_at != seen:        # another thread fetched meanwhile
                return self._keys
            self._fetched_at = _now()
            try:
                document = self._fetch(self.uri)
                keys: dict[str | None, jwt.PyJWK] = {}
                for entry in document.get("keys", ()):
                    if entry.get("use", "sig") != "sig":
                        continue
                    try:
                        keys[entry.get("kid")] = jwt.PyJWK(entry)
                    except jwt.PyJWTError:
                        continue        # a key type or algorithm this side cannot use
                self._keys = keys
            except (OSError, ValueError, AttributeError, jwt.PyJWTError) as exc:
                log.warning("JWKS %s could not be fetched (%s); keeping the keys known before",
                            self.uri, exc)
            return self._keys


@dataclass(frozen=True)
class Claims:
    """What a valid JWT says about its caller."""
    client_id: str
    username: str
    locale: str | None
    role_codes: tuple[str, ...]
    expires_at: float
    issuer: str
    subject: str        # ``sub``; the username claim when the token has none
    tenant: str | None = None   # the tenant-claim's value (security/tenants.py)


def _path(claims: JsonObject, dotted: str) -> JsonValue:
    value: JsonValue = claims
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class Issuer:
    def __init__(self, settings: JwtIssuerSettings, fetch: Fetch = _fetch) -> None:
        self.settings = settings
        self.jwks = JwksCache(settings.jwks_uri, fetch) if settings.jwks_uri else None

    def key(self, algorithm: str, kid: str | None) -> str | AllowedPublicKeys | None:
        """The secret (HS*) or the public key from the JWKS to check the signature with."""
        if algorithm.startswith("HS"):
            return self.settings.secret
        found = self.jwks.key(kid) if self.jwks else None
        key: AllowedPublicKeys | None = found.key if found is not None else None
        return key

    def claims(self, token: str, algorithm: str, kid: str | None) -> Claims | None:
        key = self.key(algorithm, kid)
        if key is None:
            return None
        s = self.settings
        claims = jwt.decode(token, key, algorithms=[algorithm], audience=list(s.audiences),
                            issuer=s.issuer, leeway=LEEWAY,
                            options={"require": ["exp", "iss", "aud"]})
        try:    # the canonical form and checks of a local username
            username = canonical_username(claims.get(s.username_claim))
        except ValueError:
            return None
        roles = _path(claims, s.roles_claim) or ()
        if isinstance(roles, str):
            roles = roles.split()
        codes = tuple(dict.fromkeys(code for role in roles if isinstance(role, str)
                                    for code in s.role_mapping.get(role, ())))
        client = claims.get(s.client_claim) or claims.get("client_id") or s.name
        locale = claims.get("locale")
        subject = claims.get("sub")
        tenant = _path(claims, s.tenant_claim) if s.tenant_claim else None
        return Claims(str(client), username, locale if isinstance(locale, str) else None, codes,
                      float(claims["exp"]), s.issuer,
                      subject if isinstance(subject, str) and subject else username,
                      tenant if isinstance(tenant, str) and tenant else None)


class JwtIssuers:
    def __init__(self, issuer_settings: Iterable[JwtIssuerSettings], fetch: Fetch = _fetch) -> None:
        self.by_iss = {s.issuer: Issuer(s, fetch) for s in issuer_settings}

    def claims(self, token: str) -> Claims | None:
        """The token's Claims when it is valid, else None (never an exception)."""
        if len(token) > MAX_TOKEN_LENGTH:
            return None
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
            # Claims and header values are any JSON until checked.
            iss: JsonValue = unverified.get("iss")
            algorithm: JsonValue = header.get("alg")
            issuer = self.by_iss.get(iss)
            if issuer is None or algorithm not in issuer.settings.algorithms:
                return None
            kid = header.get("kid")
            return issuer.claims(token, algorithm, kid if isinstance(kid, str) else None)
        except (jwt.PyJWTError, ValueError, TypeError, AttributeError):
            return None
