"""Safe retries: the first answer to an ``Idempotency-Key``, kept and replayed.

A request with the header claims ``(caller, key)`` by inserting its row (the
primary key makes one claim win, on every instance sharing the database);
the answer then fills the row in. A repeat finds the row: the same request
(method, path, query and body, compared by a hash) replays the stored answer
without running; another request under the key is 422; a repeat while the
first still runs is 409. Callers are users (password, authorization-code
and external tokens) or clients (client-credentials tokens): keys are per
caller, so nobody can replay another's answer. Rows live for
``svc.rest.idempotency-expiry`` (24 h by default); answers of 5xx are not
kept (nothing was written: a retry runs again), answers longer than
``MAX_ANSWER`` bytes are kept without their body (a repeat is 409).
"""
import hashlib
import json
import time

import peewee

from .db import database_proxy
from .errors import ApiError, BadRequest, Conflict

HEADER = "Idempotency-Key"
MAX_KEY = 255
MAX_ANSWER = 1 << 20
_PURGE_EVERY = 100      # claims between deletions of expired rows (per process)
_NOT_KEPT = ("Content-Length", "X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining",
             "RateLimit-Reset", "Set-Cookie")


class IdempotentRequest(peewee.Model):
    key = peewee.CharField(primary_key=True, max_length=64)    # hash of caller and key
    fingerprint = peewee.CharField(max_length=64)              # hash of the request
    expires = peewee.DoubleField()                              # epoch seconds
    status = peewee.IntegerField(null=True)                     # null while running
    headers = peewee.TextField(null=True)                       # JSON [[name, value], ...]
    body = peewee.BlobField(null=True)                          # null: too long to keep

    class Meta:
        database = database_proxy
        table_name = "restsvc_idempotency"


class Unprocessable(ApiError):
    status = 422


def caller_of(principal):
    """Whose keys these are: the user, or the client of a client-credentials token."""
    if principal.is_user and principal.username:
        return f"user:{principal.username}"
    if principal.client_id:
        return f"client:{principal.client_id}"
    return None


def fingerprint(method, path, query, body):
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode("utf-8"), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


class Replays:
    def __init__(self, expiry, clock=time.time):
        self.expiry = expiry
        self.clock = clock
        self._claims = 0

    def claim(self, caller, key, print_):
        """The row id when this request runs now; the stored (status,
        headers, body) when it is a repeat; 409 or 422 otherwise."""
        if not key or len(key) > MAX_KEY or not key.isprintable() or not key.isascii():
            raise BadRequest("Invalid Idempotency-Key",
                             f"An Idempotency-Key is 1 to {MAX_KEY} printable ASCII characters")
        row_id = hashlib.sha256(f"{caller}\0{key}".encode("utf-8")).hexdigest()
        now = self.clock()
        self._purge(now)
        for _ in range(2):
            try:
                IdempotentRequest.insert(key=row_id, fingerprint=print_,
                                         expires=now + self.expiry).execute()
                return row_id, None
            except peewee.IntegrityError:
                pass
            found = IdempotentRequest.get_or_none(IdempotentRequest.key == row_id)
            if found is None:
                continue        # expired and purged meanwhile: claim again
            if found.expires <= now:
                IdempotentRequest.delete().where((IdempotentRequest.key == row_id)
                                                 & (IdempotentRequest.expires <= now)).execute()
                continue
            return row_id, self._stored(found, print_)
        raise Conflict("Idempotency-Key in use", "Another request with this Idempotency-Key "
                                                 "is being answered; retry later")

    @staticmethod
    def _stored(found, print_):
        if found.fingerprint != print_:
            raise Unprocessable("Idempotency-Key reused",
                                "This Idempotency-Key was used for another request "
                                "(method, path or body differ)")
        if found.status is None:
            raise Conflict("Idempotency-Key in use", "The first request with this "
                                                     "Idempotency-Key is still being answered")
        if found.body is None:
            raise Conflict("Idempotency-Key used", f"The answer to the first request was over "
                                                   f"{MAX_ANSWER} bytes and is not kept")
        return found.status, json.loads(found.headers), bytes(found.body)

    def finish(self, row_id, status, headers, body):
        """Keep the answer (``body`` None: too long); a 5xx frees the key instead."""
        if status >= 500:
            self.release(row_id)
            return
        kept = [[name, value] for name, value in headers if name not in _NOT_KEPT]
        IdempotentRequest.update(status=status, headers=json.dumps(kept), body=body).where(
            IdempotentRequest.key == row_id).execute()

    @staticmethod
    def release(row_id):
        IdempotentRequest.delete().where(IdempotentRequest.key == row_id).execute()

    def _purge(self, now):
        self._claims += 1
        if self._claims % _PURGE_EVERY == 1:
            IdempotentRequest.delete().where(IdempotentRequest.expires <= now).execute()
