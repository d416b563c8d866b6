"""Registered OAuth clients and their secrets; the one salted slow hash.

A secret in the settings is either plain (``demo-secret`` or ``{noop}demo-secret``)
or a hash made by ``restsvc hash-secret`` (``{pbkdf2-sha256}<iterations>$<salt>$<hash>``).
User passwords use the same hash and are never stored plain.
Every verification costs the same, whether the client or user exists or not
and whatever kind of secret it has: it is padded with dummy pbkdf2 rounds up to
a fixed cost (``verify_at_cost``), so the time of a failure does not tell
whether an id or a username exists.
"""
import base64
import hashlib
import hmac
import secrets
from collections.abc import Container, Sequence

from ..settinggroups import ClientSettings
from ..settings import SettingsError

_HASH_PREFIX = "{pbkdf2-sha256}"
_PLAIN_PREFIX = "{noop}"
ITERATIONS = 200_000


def hash_secret(secret: str, iterations: int | None = None, salt: bytes | None = None) -> str:
    iterations = iterations or ITERATIONS
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, iterations)
    return (f"{_HASH_PREFIX}{iterations}${base64.b64encode(salt).decode()}"
            f"${base64.b64encode(digest).decode()}")


def _parse_hash(stored: str) -> tuple[int, bytes, bytes]:
    iterations, salt, digest = stored[len(_HASH_PREFIX):].split("$")
    return int(iterations), base64.b64decode(salt), base64.b64decode(digest)


def is_hash(stored: str) -> bool:
    return stored.startswith(_HASH_PREFIX)


def verify_secret(stored: str, given: str) -> bool:
    given_bytes = given.encode("utf-8")
    if is_hash(stored):
        iterations, salt, digest = _parse_hash(stored)
        candidate = hashlib.pbkdf2_hmac("sha256", given_bytes, salt, iterations)
        return hmac.compare_digest(candidate, digest)
    plain = stored[len(_PLAIN_PREFIX):] if stored.startswith(_PLAIN_PREFIX) else stored
    return hmac.compare_digest(plain.encode("utf-8"), given_bytes)


def cost(stored: str) -> int:
    """The pbkdf2 iterations a verification of this stored secret takes (plain: 0)."""
    return _parse_hash(stored)[0] if is_hash(stored) else 0


def verify_at_cost(stored: str, given: str, iterations: int) -> bool:
    """``verify_secret``, padded with dummy pbkdf2 rounds to ``iterations`` in
    all, so a plain secret, a cheaper hash or a decoy takes as long as the
    dearest check. Only the count of rounds matters for the time, not the input."""
    matches = verify_secret(stored, given)
    padding = iterations - cost(stored)
    if padding > 0:
        hashlib.pbkdf2_hmac("sha256", b"", _PAD_SALT, padding)
    return matches


# Stands in for the secret of an unknown client or user; nothing typed can
# match it in practice, and it is checked (and padded) like any other.
DECOY = _PLAIN_PREFIX + secrets.token_hex(32)
_PAD_SALT = secrets.token_bytes(16)


class Clients:
    def __init__(self, client_settings: Sequence[ClientSettings], known_roles: Container[str]
                 ) -> None:
        self._by_id: dict[str, ClientSettings] = {}
        for client in client_settings:
            key = f"svc.authserver.client.{client.name}"
            if is_hash(client.client_secret):
                try:
                    _parse_hash(client.client_secret)
                except ValueError:
                    raise SettingsError(f"{key}.client-secret: malformed hash") from None
            for code in client.resource_roles + client.row_level_roles:
                if code not in known_roles:
                    raise SettingsError(f"{key}: unknown role code {code!r}")
            self._by_id[client.client_id] = client
        # Every client authentication costs what the dearest registered secret costs.
        self._cost = max((cost(client.client_secret) for client in client_settings), default=0)

    def get(self, client_id: str | None) -> ClientSettings | None:
        return self._by_id.get(client_id) if client_id is not None else None

    def all(self) -> tuple[ClientSettings, ...]:
        return tuple(self._by_id.values())

    def authenticate(self, client_id: str | None, secret: str | None) -> ClientSettings | None:
        """The client when id and secret match, else None (same work either way).
        A public client has no secret and must send none."""
        client = self.get(client_id)
        if client is not None and client.is_public:
            return None if secret else client
        if secret is None:
            secret = ""
        matches = verify_at_cost(client.client_secret if client else DECOY, secret, self._cost)
        return client if client and matches else None
