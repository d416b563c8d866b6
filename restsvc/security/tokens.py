"""The token store: opaque random tokens; the database keeps only a keyed hash.

The lookup is one primary-key read; everything the gate needs (roles,
username, locale) is copied into the row when the token is issued. The gate
reads a token again at most ``gate.RECHECK_SECONDS`` after it last did, so a
revocation on one instance is seen by every instance within that time; a
revocation or change made by this process (``changes``) is seen at once.
"""
import hmac
import itertools
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import NamedTuple

import peewee

from ..db import database_proxy, write_transaction

PURGE_EVERY = 200   # tokens issued by one process between purges of expired ones
ACCESS = "access"
REFRESH = "refresh"
# A public client's refresh token once it has been exchanged for a new one:
# kept (dead) until it would have expired, so that its reuse is recognised
# and ends the whole sign-in (the family).
ROTATED = "rotated"


class StoredToken(peewee.Model):
    token_hash = peewee.CharField(primary_key=True, max_length=64)
    kind = peewee.CharField(max_length=16)
    client_id = peewee.CharField(max_length=200)
    username = peewee.CharField(max_length=200, null=True)
    # Users are revoked by id, not name: a renamed user keeps its tokens in step
    # and a new user who takes an old name never inherits the old tokens.
    user_id = peewee.CharField(max_length=36, null=True, index=True)
    locale = peewee.CharField(max_length=32, null=True)
    resource_roles = peewee.TextField(default="")
    row_level_roles = peewee.TextField(default="")
    # Granted scopes, space-separated; None: the client has no registered
    # scopes and the roles alone decide.
    scope = peewee.CharField(max_length=200, null=True)
    # An access token issued along with or from a refresh token names it, so
    # revoking the refresh token ends the whole sign-in. The tokens of an
    # authorization code sign-in name the code's hash (the family): refresh
    # tokens directly, access tokens directly or through their refresh token.
    parent_hash = peewee.CharField(max_length=64, null=True, index=True)
    issued_at = peewee.BigIntegerField()
    expires_at = peewee.BigIntegerField(index=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_token"


@dataclass(frozen=True)
class Identity:
    """Whom a token speaks for; every token of one sign-in carries the same."""
    client_id: str
    username: str | None = None          # None for client-credentials tokens
    user_id: str | None = None
    locale: str | None = None
    resource_roles: tuple[str, ...] = ()
    row_level_roles: tuple[str, ...] = ()
    scope: str | None = None             # granted scopes, space-separated; None: no scopes


@dataclass(frozen=True)
class TokenInfo:
    token_hash: str
    kind: str
    identity: Identity
    issued_at: int
    expires_at: int
    parent_hash: str | None = None


def user_key(user_id: object) -> str:
    """The one spelling of a user id in the token table, whatever form the caller holds."""
    return str(uuid.UUID(str(user_id)))


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(part for part in (text or "").split(",") if part)


class _Row(NamedTuple):
    """A token's row as ``find_hash`` reads it: its columns, by their names."""
    token_hash: str
    kind: str
    client_id: str
    username: str | None
    user_id: str | None
    locale: str | None
    resource_roles: str
    row_level_roles: str
    issued_at: int
    expires_at: int
    parent_hash: str | None
    scope: str | None


_COLUMNS = tuple(StoredToken._meta.fields[name] for name in _Row._fields)


_changes = itertools.count(1)


class TokenStore:
    # Moves on every revocation or change of stored tokens made in this process
    # (next() on a count is atomic, also across threads).
    changes = 0

    @classmethod
    def _changed(cls) -> None:
        cls.changes = next(_changes)

    def __init__(self, secret_key: str) -> None:
        # Keyed once: each hash copies it (cheaper than keying OpenSSL's HMAC anew).
        self._keyed = hmac.new(secret_key.encode("utf-8"), digestmod="sha256")
        self._find_sql: str | None = None
        self._issued = 0

    def hash(self, token: str) -> str:
        keyed = self._keyed.copy()
        keyed.update(token.encode("utf-8"))
        return keyed.hexdigest()

    def issue(self, kind: str, identity: Identity, ttl: int, parent_hash: str | None = None) -> str:
        """A new token string; only its hash is stored."""
        token = secrets.token_urlsafe(32)
        now = int(time.time())
        StoredToken.insert(
            token_hash=self.hash(token), kind=kind, client_id=identity.client_id,
            username=identity.username, locale=identity.locale,
            user_id=user_key(identity.user_id) if identity.user_id else None,
            resource_roles=",".join(identity.resource_roles),
            row_level_roles=",".join(identity.row_level_roles), scope=identity.scope,
            parent_hash=parent_hash, issued_at=now, expires_at=now + ttl,
        ).execute()
        self._issued += 1
        if self._issued % PURGE_EVERY == 0:     # expired rows would otherwise pile up
            self.purge_expired()
        return token

    def find(self, token: str | None) -> TokenInfo | None:
        """The live token's record of either kind, or None (unknown, expired,
        revoked, rotated)."""
        info = self.find_any(token)
        return None if info is None or info.kind == ROTATED else info

    def find_any(self, token: str | None) -> TokenInfo | None:
        """``find``, rotated refresh tokens included."""
        if not token or len(token) > 512:
            return None
        return self.find_hash(self.hash(token))

    def find_hash(self, token_hash: str) -> TokenInfo | None:
        """``find`` for a token already hashed."""
        if self._find_sql is None:      # built once: this runs on every request
            self._find_sql = StoredToken.select(*_COLUMNS).where(
                StoredToken.token_hash == "").sql()[0]
        found = database_proxy.execute_sql(self._find_sql, (token_hash,)).fetchone()
        if found is None:
            return None
        row = _Row._make(found)
        if row.expires_at <= time.time():
            return None
        identity = Identity(row.client_id, row.username, row.user_id, row.locale,
                            _split(row.resource_roles), _split(row.row_level_roles), row.scope)
        return TokenInfo(row.token_hash, row.kind, identity, row.issued_at, row.expires_at,
                         row.parent_hash)

    def lookup(self, token: str | None, kind: str = ACCESS) -> TokenInfo | None:
        """The live token of this kind, or None."""
        info = self.find(token)
        return info if info is not None and info.kind == kind else None

    def revoke(self, info: TokenInfo) -> int:
        """Delete a token; a refresh token takes its access tokens with it, and
        one of an authorization code sign-in the whole family (sign-out)."""
        if info.kind == REFRESH and info.parent_hash:
            return self.revoke_family(info.parent_hash)
        condition = StoredToken.token_hash == info.token_hash
        if info.kind == REFRESH:
            condition |= StoredToken.parent_hash == info.token_hash
        TokenStore._changed()
        count: int = StoredToken.delete().where(condition).execute()
        return count

    @staticmethod
    def revoke_family(family_hash: str) -> int:
        """Every token of one authorization code sign-in, rotated ones included."""
        with write_transaction(database_proxy):
            refresh = [row.token_hash for row in StoredToken.select(StoredToken.token_hash)
                       .where(StoredToken.parent_hash == family_hash)]
            condition = StoredToken.parent_hash == family_hash
            if refresh:
                condition |= StoredToken.parent_hash.in_(refresh)
            TokenStore._changed()
            count: int = StoredToken.delete().where(condition).execute()
            return count

    @staticmethod
    def rotate(info: TokenInfo) -> bool:
        """Mark a refresh token as exchanged. False when it already was (two
        requests raced with one token): the caller treats that as reuse."""
        TokenStore._changed()
        count: int = StoredToken.update(kind=ROTATED).where(
            StoredToken.token_hash == info.token_hash, StoredToken.kind == REFRESH).execute()
        return count == 1

    @staticmethod
    def revoke_user(user_id: object) -> int:
        """All tokens of a user (on disable, delete or a new password)."""
        TokenStore._changed()
        count: int = StoredToken.delete().where(StoredToken.user_id == user_key(user_id)).execute()
        return count

    @staticmethod
    def follow_user(user_id: object, username: str, locale: str | None) -> int:
        """Keep a user's live tokens in step with a new locale. A new username
        ends them: what was granted to one name must not pass to another."""
        key = user_key(user_id)
        TokenStore._changed()
        StoredToken.delete().where(StoredToken.user_id == key,
                                   StoredToken.username != username).execute()
        count: int = StoredToken.update(locale=locale).where(StoredToken.user_id == key).execute()
        return count

    @staticmethod
    def set_locale(token_hash: str, locale: str | None) -> bool:
        """The locale of an access token's session: the token, the refresh token
        it came with and the other tokens of that refresh token or sign-in.
        False when the token is not in the store (a JWT of an identity provider)."""
        row = StoredToken.select(StoredToken.parent_hash).where(
            StoredToken.token_hash == token_hash, StoredToken.kind == ACCESS).first()
        if row is None:
            return False
        condition = StoredToken.token_hash == token_hash
        if row.parent_hash:
            condition |= (StoredToken.parent_hash == row.parent_hash) | (
                (StoredToken.token_hash == row.parent_hash) & (StoredToken.kind == REFRESH))
        TokenStore._changed()
        StoredToken.update(locale=locale).where(condition).execute()
        return True

    def purge_expired(self) -> int:
        count: int = StoredToken.delete().where(StoredToken.expires_at <= int(time.time())).execute()
        return count
