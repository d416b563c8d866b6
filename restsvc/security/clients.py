"""Registered OAuth clients and their secrets.

A secret in the settings is either plain (``demo-secret`` or ``{noop}demo-secret``)
or a hash made by ``restsvc hash-secret`` (``{pbkdf2-sha256}<iterations>$<salt>$<hash>``).
Comparisons take constant time, also for unknown clients.
"""
import base64
import hashlib
import hmac
import secrets

from ..settings import SettingsError

_HASH_PREFIX = "{pbkdf2-sha256}"
_PLAIN_PREFIX = "{noop}"
ITERATIONS = 200_000


def hash_secret(secret, iterations=ITERATIONS, salt=None):
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode("utf-8"), salt, iterations)
    return (f"{_HASH_PREFIX}{iterations}${base64.b64encode(salt).decode()}"
            f"${base64.b64encode(digest).decode()}")


def _parse_hash(stored):
    iterations, salt, digest = stored[len(_HASH_PREFIX):].split("$")
    return int(iterations), base64.b64decode(salt), base64.b64decode(digest)


def verify_secret(stored, given):
    given_bytes = given.encode("utf-8")
    if stored.startswith(_HASH_PREFIX):
        iterations, salt, digest = _parse_hash(stored)
        candidate = hashlib.pbkdf2_hmac("sha256", given_bytes, salt, iterations)
        return hmac.compare_digest(candidate, digest)
    plain = stored[len(_PLAIN_PREFIX):] if stored.startswith(_PLAIN_PREFIX) else stored
    return hmac.compare_digest(plain.encode("utf-8"), given_bytes)


class Clients:
    def __init__(self, client_settings, known_roles):
        self._by_id = {}
        for client in client_settings:
            key = f"svc.authserver.client.{client.name}"
            if client.client_secret.startswith(_HASH_PREFIX):
                try:
                    _parse_hash(client.client_secret)
                except ValueError:
                    raise SettingsError(f"{key}.client-secret: malformed hash") from None
            for code in client.resource_roles + client.row_level_roles:
                if code not in known_roles:
                    raise SettingsError(f"{key}: unknown role code {code!r}")
            self._by_id[client.client_id] = client
        self._decoy = None

    @property
    def decoy(self):
        """Verified against when the client id is unknown, so timing does not
        tell; made on first use because hashing it takes a while."""
        if self._decoy is None:
            self._decoy = hash_secret(secrets.token_hex(8), iterations=ITERATIONS)
        return self._decoy

    def get(self, client_id):
        return self._by_id.get(client_id)

    def authenticate(self, client_id, secret):
        """The client when id and secret match, else None (same work either way)."""
        client = self._by_id.get(client_id)
        stored = client.client_secret if client else self.decoy
        matches = verify_secret(stored, secret)
        return client if client and matches else None
