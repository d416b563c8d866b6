"""API keys (personal access tokens): long-lived bearer tokens a user makes
for itself, or an administrator for any user or for a registered client
(who may do which: keygrants.py; the manual: restsvc/docs/apikeys.md).

A key is ``rsk_`` and 43 random characters, shown once; the table keeps only
its keyed hash (the token store's, so the gate hashes a token once whatever
it is). The gate sends a token with that prefix here and every other one to
the token store: an ordinary access token costs no extra query. A key speaks
with its owner's roles as they are when it is read (a user's from the user's
row, a client's from the settings), narrowed by its scope; it ends when it
expires, is revoked, or its user gets a new password, is disabled or deleted
(keytable.revoke_user_keys, called by the user hooks).

The last use is written at most once a minute per key, over every process
(a conditional update), and never on the request's way: the gate notes the
use when it reads the key and the app writes it after the answer is sent.
"""
import datetime
import math
import secrets
import threading
import time
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import peewee

from ..db import database_proxy, write_transaction
from ..errors import BadRequest, Conflict
from ..jsonio import JsonObject, JsonValue
from ..model.datatypes import format_utc_instant
from ..values import duration
from .clients import Clients
from .keytable import ApiKey
from .registry import RoleRegistry
from .scopes import ALL_SCOPES
from .tokens import Identity, TokenStore, user_key
from .users import User

PREFIX = "rsk_"
# The client id a user's key speaks through (logs, the metrics' client
# label, svc.rate-limit.client.api-key): one for every user's key.
USER_KEY_CLIENT = "api-key"
LAST_USE_EVERY = 60                     # seconds between two writes of a key's last use
MAX_KEYS = 100                          # keys per owner
MAX_NAME = 100
MAX_LIFETIME = 3650 * 86400             # ten years
_WRITTEN_MAX = 10_000                   # last uses remembered per process (then forgotten)


def is_key(token: str) -> bool:
    return token.startswith(PREFIX)


@dataclass(frozen=True)
class Owner:
    """Whose key: a user of this service (id and name) or a registered client."""
    user_id: str | None = None
    username: str | None = None
    client_id: str | None = None

    @property
    def label(self) -> str:
        return f"user {self.username}" if self.user_id else f"client {self.client_id}"


@dataclass(frozen=True)
class KeyInfo:
    """A live key as the gate needs it."""
    key_id: str
    identity: Identity
    expires_at: float           # epoch seconds; math.inf for a key without expiry


class _Found(NamedTuple):
    """The gate's one row: the key and, for a user's key, its user."""
    key_id: str
    client_id: str | None
    scope: str | None
    expires_at: int | None
    last_used_at: int | None
    user_id: object
    username: str | None
    locale: str | None
    roles: str | None
    active: object


def checked_name(value: JsonValue) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME \
            or any(unicodedata.category(ch).startswith("C") for ch in value):
        raise BadRequest("Invalid API key", f"name: a text of 1 to {MAX_NAME} characters, "
                                            "no control characters, is required")
    return value.strip()


def checked_lifetime(value: JsonValue) -> int | None:
    """``expiresIn``: seconds, or a duration such as ``90d``; None: no expiry."""
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError("expected a duration")
        seconds = duration(value)
    except ValueError:
        raise BadRequest("Invalid API key", "expiresIn: seconds or a duration such as 30d "
                                            "or 12h") from None
    if seconds > MAX_LIFETIME:
        raise BadRequest("Invalid API key", "expiresIn: at most 3650d")
    return seconds


def checked_scope(value: JsonValue, ceiling: str | None,
                  registered: Sequence[str] = ()) -> str | None:
    """A key's scopes, space-separated: those asked for (``scope``), never more
    than the creating token's (``ceiling``, None: any) nor than a client
    owner's ``registered`` ones; asking for none gives all those allowed
    (None when nothing narrows: the roles alone decide)."""
    if value is not None and not isinstance(value, str):
        raise BadRequest("Invalid API key", "scope: a space-separated list of read and write")
    asked = (value or "").split()
    unknown = [scope for scope in asked if scope not in ALL_SCOPES]
    if unknown:
        raise BadRequest("Invalid API key", f"scope: unknown scope {unknown[0]!r} "
                                            f"(known: read, write)")
    allowed = [scope for scope in sorted(ALL_SCOPES)
               if (ceiling is None or scope in ceiling.split())
               and (not registered or scope in registered)]
    refused = [scope for scope in asked if scope not in allowed]
    if not allowed:
        raise BadRequest("Invalid API key", "scope: the creating token and the client "
                                            "share no scope to give the key")
    if refused:
        raise BadRequest("Invalid API key", f"scope: {refused[0]!r} is more than the "
                                            f"{'client' if registered else 'token'} holds")
    if not asked and ceiling is None and not registered:
        return None
    return " ".join(scope for scope in allowed if not asked or scope in asked)


def _instant(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    return format_utc_instant(datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc))


def as_json(row: ApiKey, owner: Owner) -> JsonObject:
    """What answers show of a key: never its secret nor its hash."""
    shown: JsonObject = {"id": row.id, "name": row.name}
    if owner.user_id:
        shown["username"] = owner.username
    else:
        shown["clientId"] = owner.client_id
    shown.update(scope=row.scope, createdBy=row.created_by, createdAt=_instant(row.created_at),
                 expiresAt=_instant(row.expires_at), lastUsedAt=_instant(row.last_used_at))
    return shown


def _of(owner: Owner) -> "peewee.Expression":
    """The condition on the owner's keys."""
    if owner.user_id:
        return ApiKey.user_id == user_key(owner.user_id)
    return ApiKey.client_id == owner.client_id


class KeyStore:
    def __init__(self, tokens: TokenStore, clients: Clients, roles: RoleRegistry) -> None:
        self.tokens, self.clients, self.roles = tokens, clients, roles
        self._find_sql: str | None = None
        self._lock = threading.Lock()
        # key id -> when it was used: last uses due, written after the answer
        # (the app asks on every request, so this stays a plain dict)
        self.pending: dict[str, int] = {}
        self._written: dict[str, int] = {}      # key id -> the last use this process wrote

    # -- the gate's side ----------------------------------------------------
    def find_hash(self, token_hash: str) -> KeyInfo | None:
        """The live key of this hash, or None (unknown, expired, revoked, its
        user disabled or gone, its client no longer registered)."""
        if self._find_sql is None:      # built once: the gate asks on a key's every recheck
            self._find_sql = ApiKey.select(
                ApiKey.id, ApiKey.client_id, ApiKey.scope, ApiKey.expires_at,
                ApiKey.last_used_at, User.id, User.username, User.locale, User.roles,
                User.active).join(User, peewee.JOIN.LEFT_OUTER, on=User.id == ApiKey.user_id
                                  ).where(ApiKey.token_hash == "").sql()[0]
        fetched = database_proxy.execute_sql(self._find_sql, (token_hash,)).fetchone()
        if fetched is None:
            return None
        row = _Found._make(fetched)
        now = time.time()
        if row.expires_at is not None and row.expires_at <= now:
            return None
        identity = self._identity(row)
        if identity is None:
            return None
        self._note_use(row.key_id, row.last_used_at, int(now))
        return KeyInfo(row.key_id, identity,
                       math.inf if row.expires_at is None else row.expires_at)

    def _identity(self, row: _Found) -> Identity | None:
        if row.client_id is not None:
            client = self.clients.get(row.client_id)
            if client is None:
                return None
            scope = row.scope
            if client.scopes:       # the client's scopes as the settings say them now
                held = (" ".join(client.scopes) if scope is None else scope).split()
                scope = " ".join(s for s in client.scopes if s in held)
            return Identity(client.client_id, resource_roles=client.resource_roles,
                            row_level_roles=client.row_level_roles, scope=scope)
        if row.username is None or not row.active:
            return None
        codes = tuple(code for code in (row.roles or "").split(",") if code)
        resource, row_level = self.roles.split(codes)
        return Identity(USER_KEY_CLIENT, row.username, user_key(row.user_id), row.locale,
                        resource, row_level, row.scope)

    def _note_use(self, key_id: str, last_used: int | None, now: int) -> None:
        if now >= max(last_used or 0, self._written.get(key_id, 0)) + LAST_USE_EVERY:
            with self._lock:
                self.pending[key_id] = now

    def record_uses(self) -> int:
        """Write the last uses noted: each only when the stored one is a
        minute old, so the processes together write at most once a minute.
        Returns how many were written."""
        with self._lock:
            pending, self.pending = self.pending, {}
        if len(self._written) >= _WRITTEN_MAX:
            self._written.clear()
        written = 0
        for key_id, when in pending.items():
            written += ApiKey.update(last_used_at=when).where(
                ApiKey.id == key_id, ApiKey.last_used_at.is_null()
                | (ApiKey.last_used_at <= when - LAST_USE_EVERY)).execute()
            self._written[key_id] = when
        return written

    # -- management ---------------------------------------------------------
    def create(self, owner: Owner, name: str, scope: str | None, lifetime: int | None,
               created_by: str) -> tuple[ApiKey, str]:
        """A new key of ``owner``: its row and its secret (shown this once)."""
        secret = PREFIX + secrets.token_urlsafe(32)
        now = int(time.time())
        with write_transaction(database_proxy):
            # Expired keys stay listed until their owner revokes them or makes a new one.
            ApiKey.delete().where(_of(owner), ApiKey.expires_at <= now).execute()
            if ApiKey.select().where(_of(owner)).count() >= MAX_KEYS:
                raise Conflict("Too many API keys",
                               f"The {owner.label} has {MAX_KEYS} keys; revoke one first")
            row: ApiKey = ApiKey.create(
                id=str(uuid.uuid4()), token_hash=self.tokens.hash(secret), name=name,
                user_id=owner.user_id, client_id=None if owner.user_id else owner.client_id,
                scope=scope, created_by=created_by, created_at=now,
                expires_at=now + lifetime if lifetime else None)
        return row, secret

    @staticmethod
    def listed(owner: Owner) -> list[ApiKey]:
        return list(ApiKey.select().where(_of(owner)).order_by(ApiKey.created_at, ApiKey.id))

    @staticmethod
    def find(key_id: str) -> ApiKey | None:
        if len(key_id) > 36:            # no id is longer (and a column may refuse it)
            return None
        found: ApiKey | None = ApiKey.get_or_none(ApiKey.id == key_id)
        return found

    @staticmethod
    def owner(row: ApiKey) -> Owner:
        """Whose key it is (a user's by the name the user has now)."""
        if row.user_id is None:
            return Owner(client_id=row.client_id)
        user: User | None = User.get_or_none(User.id == row.user_id)
        return Owner(user_key(row.user_id), user.username if user else None)

    @staticmethod
    def revoke(row: ApiKey) -> None:
        ApiKey.delete().where(ApiKey.id == row.id).execute()
        TokenStore._changed()       # the gate forgets what it read of the key
