"""Registered OAuth clients and their secrets; the one salted slow hash.

A secret in the settings is either plain (``demo-secret`` or ``{noop}demo-secret``)
or a hash made by ``restsvc hash-secret`` (``{pbkdf2-sha256}<iterations>$<salt>$<hash>``).
User passwords use the same hash and are never stored plain.
Comparisons take constant time, also for unknown clients and users.
"""
import base64
import functools
import hashlib
import hmac
import secrets

from ..settings import SettingsError

_HASH_PREFIX = "{pbkdf2-sha256}"
_PLAIN_PREFIX = "{noop}"
ITERATIONS = 200_000


def hash_secret(secret, iterations=None, salt=None):
    iterations = iterations or ITERATIONS
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, iterations)
    return (f"{_HASH_PREFIX}{iterations}${base64.b64encode(salt).decode()}"
            f"${base64.b64encode(digest).decode()}")


def _parse_hash(stored):
    iterations, salt, digest = stored[len(_HASH_PREFIX):].split("$")
    return int(iterations), base64.b64decode(salt), base64.b64decode(digest)


def is_hash(stored):
    return stored.startswith(_HASH_PREFIX)


def verify_secret(stored, given):
    given_bytes = given.encode("utf-8")
    if is_hash(stored):
        iterations, salt, digest = _parse_hash(stored)
        candidate = hashlib.pbkdf2_hmac("sha256", given_bytes, salt, iterations)
        return hmac.compare_digest(candidate, digest)
    plain = stored[len(_PLAIN_PREFIX):] if stored.startswith(_PLAIN_PREFIX) else stored
    return hmac.compare_digest(plain.encode("utf-8"), given_bytes)


@functools.lru_cache(maxsize=1)
def decoy_hash():
    """Verified against when the client or user is unknown, so timing does not tell.
    Made once per process: every app built in the process shares it."""
    return hash_secret(secrets.token_hex(8))


class Clients:
    def __init__(self, client_settings, known_roles):
        self._by_id = {}
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

    def get(self, client_id):
        return self._by_id.get(client_id)

    def authenticate(self, client_id, secret):
        """The client when id and secret match, else None (same work either way)."""
        client = self._by_id.get(client_id)
        stored = client.client_secret if client else decoy_hash()
        matches = verify_secret(stored, secret)
        return client if client and matches else None
