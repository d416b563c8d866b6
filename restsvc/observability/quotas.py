"""Per-client, per-user, per-key and per-tenant request quotas
(``svc.rate-limit.client.<client id>``, ``svc.rate-limit.user.<username>``,
``svc.rate-limit.key.<API key id>``, ``svc.rate-limit.tenant.<tenant key>``:
``100/s burst 200``), counted in the database so that every worker of every
instance counts the same requests. A key with a quota of its own is held by
it (and its tenant's quota) alone: its requests neither count against its
user's or client's quota nor are held by it, so a busy key leaves the
owner's other tokens alone. A tenant's quota counts every request of the
tenant's callers (docs/tenants.md).

The count is GCRA (a token bucket kept as one number): each key's row holds
its theoretical arrival time ``tat``; a request at ``now`` is allowed when
``tat - now`` leaves room for it within the burst, and then moves ``tat`` one
interval on. The check and the move are one statement (an upsert with a
condition, returning the new ``tat``), atomic on SQLite and PostgreSQL alike:
no lost updates, no lock held across round trips. A refused request changes
nothing, and only then is the row read again (for ``Retry-After``).

Why the database and not Redis: it is there already and shared by all
instances, the cost is one small write per limited request and nothing for
callers without a quota (restsvc/docs/operations.md "Per-client rate limits").
"""
import hashlib
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import peewee

from ..db import database_proxy
from ..errors import ApiError
from .metrics import Metric

if TYPE_CHECKING:
    from ..security.gate import Principal


class QuotaBucket(peewee.Model):
    key = peewee.CharField(primary_key=True, max_length=255)     # client:, user:, key:, tenant:
    tat = peewee.DoubleField()                                   # epoch seconds

    class Meta:
        database = database_proxy
        table_name = "restsvc_quota"


class TooManyRequests(ApiError):
    status = 429


def _user_bucket(principal: "Principal") -> str:
    """A user's bucket. An identity provider's user named like a local user
    gets that name's quota, but a bucket of its own: it cannot use up the
    local user's requests (the issuer and subject, hashed to fit the key)."""
    if principal.issuer is None:
        return f"user:{principal.username}"
    digest = hashlib.sha256(str(principal.identity).encode("utf-8")).hexdigest()
    return f"user:jwt:{digest}"


# ("client" | "user" | "key" | "tenant", name) -> (requests per second, burst)
Limits = dict[tuple[str, str], tuple[float, int]]
Headers = dict[str, int]      # RateLimit-Limit, -Remaining, -Reset


class Quotas:
    def __init__(self, limits: Limits, refusals: Metric | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.limits = limits         # (kind, name) -> (per second, burst)
        self.refusals = refusals     # the counter of refusals by kind, when metrics are on
        self.clock = clock

    def check(self, principal: "Principal") -> Headers | None:
        """Count a request of ``principal`` against its quotas: the ``RateLimit-*``
        headers to answer, None when it has no quota; 429 when one is used up."""
        headers: Headers | None = None
        for key, (rate, burst) in self._quotas(principal):
            found = self._take(key, rate, burst)
            if headers is None or found["RateLimit-Remaining"] < headers["RateLimit-Remaining"]:
                headers = found
        return headers

    def _quotas(self, principal: "Principal") -> list[tuple[str, tuple[float, int]]]:
        found: list[tuple[str, tuple[float, int]]] = []
        if principal.client_id is None:
            return found
        if principal.tenant is not None:    # every request of the tenant's callers counts
            limit = self.limits.get(("tenant", principal.tenant))
            if limit is not None:
                found.append((f"tenant:{principal.tenant}", limit))
        if principal.key_id is not None:
            limit = self.limits.get(("key", principal.key_id))
            if limit is not None:
                return found + [(f"key:{principal.key_id}", limit)]
        limit = self.limits.get(("client", principal.client_id))
        if limit is not None:
            found.append((f"client:{principal.client_id}", limit))
        if principal.is_user:
            limit = self.limits.get(("user", principal.username))
            if limit is not None:
                found.append((_user_bucket(principal), limit))
        return found

    def _take(self, key: str, rate: float, burst: int) -> Headers:
        interval = 1 / rate
        # (a hair more: the sum of many float intervals must not refuse the last of a burst)
        tolerance = (burst - 1) * interval + interval * 1e-6
        now = self.clock()
        tat = QuotaBucket.tat
        later = peewee.Case(None, [(tat > now, tat)], now) + interval
        rows = list(QuotaBucket.insert(key=key, tat=now + interval)
                    .on_conflict(conflict_target=[QuotaBucket.key], update={tat: later},
                                 where=(tat - now <= tolerance))
                    .returning(QuotaBucket.tat).tuples().execute())
        if not rows:
            if self.refusals is not None:
                self.refusals.inc((key.partition(":")[0],))
            stored = QuotaBucket.get_or_none(QuotaBucket.key == key)
            wait = (stored.tat - now - tolerance) if stored is not None else interval
            raise TooManyRequests(
                "Too many requests",
                f"The quota of {burst} requests at {_rate_text(rate)} is used up; "
                f"try again in {max(1, math.ceil(wait))} s",
                headers={"Retry-After": str(max(1, math.ceil(wait))), **{
                    name: str(value) for name, value in
                    _headers(burst, 0, (stored.tat if stored else now) - now).items()}})
        new_tat: float = rows[0][0]
        remaining = int((now + tolerance + interval - new_tat) / interval)
        return _headers(burst, max(0, remaining), new_tat - now)


def _headers(burst: int, remaining: int, until_full: float) -> Headers:
    # draft-ietf-httpapi-ratelimit-headers: limit, what is left, seconds until reset
    return {"RateLimit-Limit": burst, "RateLimit-Remaining": remaining,
            "RateLimit-Reset": max(0, math.ceil(until_full))}


def _rate_text(rate: float) -> str:
    return f"{rate:g}/s" if rate >= 1 else f"{rate * 60:g}/min"
