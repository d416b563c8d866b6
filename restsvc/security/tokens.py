"""The token store: opaque random tokens; the database keeps only a keyed hash.

A token is looked up on every protected request, so there is no cache: a
revocation on one instance is seen by every other instance at its next
request. The lookup is one primary-key read.
"""
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

import peewee

from ..db import database_proxy

ACCESS = "access"
REFRESH = "refresh"


class StoredToken(peewee.Model):
    token_hash = peewee.CharField(primary_key=True, max_length=64)
    kind = peewee.CharField(max_length=16)
    client_id = peewee.CharField(max_length=200)
    username = peewee.CharField(max_length=200, null=True, index=True)
    resource_roles = peewee.TextField(default="")
    row_level_roles = peewee.TextField(default="")
    issued_at = peewee.BigIntegerField()
    expires_at = peewee.BigIntegerField(index=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_token"


_COLUMNS = (StoredToken.token_hash, StoredToken.kind, StoredToken.client_id, StoredToken.username,
            StoredToken.resource_roles, StoredToken.row_level_roles, StoredToken.issued_at,
            StoredToken.expires_at)


@dataclass(frozen=True)
class TokenInfo:
    token_hash: str
    kind: str
    client_id: str
    username: str
    resource_roles: tuple
    row_level_roles: tuple
    issued_at: int
    expires_at: int


def _split(text):
    return tuple(part for part in (text or "").split(",") if part)


class TokenStore:
    def __init__(self, secret_key):
        self._key = secret_key.encode("utf-8")
        self._lookup_sql = None

    def hash(self, token):
        return hmac.new(self._key, token.encode("utf-8"), hashlib.sha256).hexdigest()

    def issue(self, kind, client_id, ttl, username=None, resource_roles=(), row_level_roles=()):
        """A new token string; only its hash is stored."""
        token = secrets.token_urlsafe(32)
        now = int(time.time())
        StoredToken.insert(
            token_hash=self.hash(token), kind=kind, client_id=client_id, username=username,
            resource_roles=",".join(resource_roles), row_level_roles=",".join(row_level_roles),
            issued_at=now, expires_at=now + ttl,
        ).execute()
        return token

    def lookup(self, token, kind=ACCESS):
        """The live token's record, or None for an unknown, expired or revoked token."""
        if not token or len(token) > 512:
            return None
        if self._lookup_sql is None:     # built once: this runs on every request
            self._lookup_sql = StoredToken.select(*_COLUMNS).where(
                StoredToken.token_hash == "").sql()[0]
        row = database_proxy.execute_sql(self._lookup_sql, (self.hash(token),)).fetchone()
        if row is None:
            return None
        token_hash, token_kind, client_id, username, roles, row_roles, issued, expires = row
        if token_kind != kind or expires <= time.time():
            return None
        return TokenInfo(token_hash, token_kind, client_id, username, _split(roles),
                         _split(row_roles), issued, expires)

    def revoke(self, token):
        return StoredToken.delete().where(StoredToken.token_hash == self.hash(token)).execute()

    def revoke_user(self, username):
        """All tokens of a user (on disable or delete)."""
        return StoredToken.delete().where(StoredToken.username == username).execute()

    def purge_expired(self):
        return StoredToken.delete().where(StoredToken.expires_at <= int(time.time())).execute()
