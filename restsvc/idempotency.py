"""Safe retries: the first answer to an ``Idempotency-Key``, kept and replayed.

A request with the header claims ``(caller, key)`` by inserting its row (the
primary key makes one claim win, on every instance sharing the database);
the answer then fills the row in (``api/replay.py`` does the claim, the
request's writes and the answer in one write transaction). A repeat finds
the row: the same request (method, path, query and body, compared by a hash)
replays the stored answer without running; another request under the key is
422; a repeat while the first still runs is 409 when the first claimed its
key apart from its writes (a service method); when they are one transaction,
the repeat waits for it and gets its answer. Keys are per caller identity (``Principal.identity``:
this service's user or client, or an identity provider's issuer and
subject) and the tenant it acts for, so nobody can replay another's
answer, nor one caller a tenant's answer for another tenant. A replay never shows more
than the caller may see now: the row keeps a digest of what the first
caller's permissions let it see, and a repeat whose permissions differ is
409 instead of a replay. Only answers of requests that ran are kept: one
refused with an error (validation, permissions, conflicts: the one write path
rolled back whatever it had begun) frees its key, as do 5xx answers. Rows
live for ``svc.rest.idempotency-expiry`` (24 h by default); answers longer
than ``MAX_ANSWER`` bytes are kept without their body (a repeat is 409).
"""
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import peewee

from .db import database_proxy
from .errors import ApiError, BadRequest, Conflict

if TYPE_CHECKING:
    from .security.gate import Principal

HEADER = "Idempotency-Key"
MAX_KEY = 255
MAX_ANSWER = 1 << 20
_PURGE_EVERY = 100      # claims between deletions of expired rows (per process)
_NOT_KEPT = ("Content-Length", "X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining",
             "RateLimit-Reset", "Set-Cookie")


class IdempotentRequest(peewee.Model):
    key = peewee.CharField(primary_key=True, max_length=64)    # hash of caller and key
    # Two halves of 32 hex digits: the request's digest, then the digest of
    # what the caller's permissions let it see (``Replays.claim``).
    fingerprint = peewee.CharField(max_length=64)
    expires = peewee.DoubleField()                              # epoch seconds
    status = peewee.IntegerField(null=True)                     # null while running
    headers = peewee.TextField(null=True)                       # JSON [[name, value], ...]
    body = peewee.BlobField(null=True)                          # null: too long to keep

    class Meta:
        database = database_proxy
        table_name = "restsvc_idempotency"


class Unprocessable(ApiError):
    status = 422


def caller_of(principal: "Principal", tenant: str | None = None) -> str | None:
    """Whose keys these are (None: the anonymous caller, who has none):
    the caller's identity and the ``tenant`` it acts for (a global caller
    acting for one tenant with ``X-Tenant-Id`` keeps keys apart from the same
    keys for another, and an identity provider's subject is one caller per
    tenant its tokens name)."""
    identity = principal.identity
    if identity is None or tenant is None:
        return identity
    return f"{identity}\0tenant:{tenant}"


def fingerprint(method: str, path: str, query: bytes, body: bytes) -> str:
    """The request's digest (32 hex digits): what a repeat must send again."""
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode("utf-8"), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()[:32]


def sight(permissions_key: str) -> str:
    """The digest (32 hex digits) of what a caller may see, from the key that
    tells permissions apart (``data.answer.etags.permissions_key``)."""
    return hashlib.sha256(permissions_key.encode("utf-8")).hexdigest()[:32]


class Replays:
    def __init__(self, expiry: float, clock: Callable[[], float] = time.time,
                 database: peewee.Database | None = None) -> None:
        """``database``: the application's (the one its requests' write
        transactions are on, not necessarily the process's latest)."""
        self.expiry = expiry
        self.clock = clock
        self.database: peewee.Database = database or IdempotentRequest._meta.database
        self._claims = 0

    def claim(self, caller: str, key: str, print_: str,
              seen: str) -> tuple[str, tuple[int, list[tuple[str, str]], bytes] | None]:
        """The row id when this request runs now; the stored (status,
        headers, body) when it is a repeat; 409 or 422 otherwise.
        ``print_``: the request's ``fingerprint``; ``seen``: the ``sight`` of
        the caller's permissions."""
        if not key or len(key) > MAX_KEY or not key.isprintable() or not key.isascii():
            raise BadRequest("Invalid Idempotency-Key",
                             f"An Idempotency-Key is 1 to {MAX_KEY} printable ASCII characters")
        row_id = hashlib.sha256(f"{caller}\0{key}".encode("utf-8")).hexdigest()
        now = self.clock()
        self._purge(now)
        database = self.database
        for _ in range(2):
            try:
                # Inside the request's transaction, a savepoint: PostgreSQL
                # aborts a whole transaction at a failed statement.
                with database.atomic() if database.in_transaction() else contextlib.nullcontext():
                    IdempotentRequest.insert(key=row_id, fingerprint=print_ + seen,
                                             expires=now + self.expiry).execute(database)
                return row_id, None
            except peewee.IntegrityError:
                pass
            found = IdempotentRequest.select().where(IdempotentRequest.key == row_id).first(database)
            if found is None:
                continue        # expired and purged meanwhile: claim again
            if found.expires <= now:
                IdempotentRequest.delete().where((IdempotentRequest.key == row_id)
                                                 & (IdempotentRequest.expires <= now)).execute(database)
                continue
            return row_id, self._stored(found, print_, seen)
        raise Conflict("Idempotency-Key in use", "Another request with this Idempotency-Key "
                                                 "is being answered; retry later")

    @staticmethod
    def _stored(found: IdempotentRequest, print_: str,
                seen: str) -> tuple[int, list[tuple[str, str]], bytes]:
        if found.fingerprint[:32] != print_:
            raise Unprocessable("Idempotency-Key reused",
                                "This Idempotency-Key was used for another request "
                                "(method, path or body differ)")
        if found.status is None:
            raise Conflict("Idempotency-Key in use", "The first request with this "
                                                     "Idempotency-Key is still being answered")
        if found.fingerprint[32:] != seen:
            raise Conflict("Idempotency-Key used", f"The first request with this Idempotency-Key "
                                                   f"was answered {found.status} for other "
                                                   f"permissions than the caller has now: the "
                                                   f"answer is not replayed")
        if found.body is None:
            raise Conflict("Idempotency-Key used", f"The answer to the first request was over "
                                                   f"{MAX_ANSWER} bytes and is not kept")
        headers = [(str(name), str(value)) for name, value in json.loads(found.headers or "[]")]
        return found.status, headers, bytes(found.body)

    def finish(self, row_id: str, status: int, headers: list[tuple[str, str]],
               body: bytes | None) -> None:
        """Keep the answer (``body`` None: too long); a 5xx frees the key instead."""
        if status >= 500:
            self.release(row_id)
            return
        kept = [[name, value] for name, value in headers if name not in _NOT_KEPT]
        IdempotentRequest.update(status=status, headers=json.dumps(kept), body=body).where(
            IdempotentRequest.key == row_id).execute(self.database)

    def release(self, row_id: str) -> None:
        IdempotentRequest.delete().where(IdempotentRequest.key == row_id).execute(self.database)

    def _purge(self, now: float) -> None:
        self._claims += 1
        if self._claims % _PURGE_EVERY == 1:
            IdempotentRequest.delete().where(IdempotentRequest.expires <= now).execute(self.database)
