"""Sign-in limits on /oauth2/*: guessing stays bounded, yet an attacker who
does not know a secret cannot lock the legitimate client or user out.

Every client authentication and every password sign-in is an attempt on an
*account* (a client id or a username) from an *address*. The policy:

- Per account and address: at ``max_failures`` failures within ``window``
  seconds of the first, that address is refused for that account (429 with
  ``Retry-After``) until the window ends.
- Per address: at ``address_max_failures`` failures within the window, over
  all accounts, the address is refused for everything until the window ends.
- Per account, over all addresses: after ``FREE_FAILURES`` failures within
  the window, each further failure makes the address that failed wait before
  its next attempt on that account: 1 s, 2 s, 4 s, ... at most ``MAX_DELAY``.
  The wait is an immediate 429 with ``Retry-After``, never a sleep that holds
  a worker. An address that has not failed on the account is not delayed, so
  the right credentials from anywhere else are accepted at once.

So failures only ever hold back the address they came from. Refusals come
before the credentials are checked (a correct guess while refused tells
nothing) and count for nothing. Check and count are one atomic statement per
key, an upsert that takes a slot only while the key is under its limit, so
parallel requests cannot get more attempts checked than the limit on SQLite
or PostgreSQL; a successful attempt gives its slots back. The counts live in
the database, so every worker and every instance shares them. Keys are
stored hashed: the table never holds what a caller typed as a username.
"""
import hashlib
import time
from dataclasses import dataclass

import peewee

from ..db import database_proxy
from ..errors import OAuthError

FREE_FAILURES = 3      # failures of an account (from anywhere) before delays start
MAX_DELAY = 60         # seconds; the longest wait one failure can cause


class AuthAttempt(peewee.Model):
    key = peewee.CharField(primary_key=True, max_length=64)
    failures = peewee.IntegerField()                  # failed (or still running) attempts
    window_start = peewee.BigIntegerField(index=True)
    retry_at = peewee.BigIntegerField(default=0)      # no attempt before (delays)

    class Meta:
        database = database_proxy
        table_name = "restsvc_auth_attempt"


class TooManyFailures(OAuthError):
    """429 of a sign-in limit; ``limit`` says which one refused (metrics)."""

    def __init__(self, wait: int, limit: str) -> None:
        super().__init__("temporarily_unavailable",
                         "Too many failed authentication attempts; try again later",
                         status=429, headers={"Retry-After": str(wait)})
        self.limit = limit      # "account" or "address"


def _key(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Attempt:
    """One running attempt and the slots it holds."""
    pair: str           # the key of account and address
    account: str        # the key of the account
    taken: tuple[str, ...]  # keys whose slot this attempt holds


def delay_after(failures: int) -> int:
    """Seconds the failing address waits after the account's ``failures``-th failure."""
    if failures <= FREE_FAILURES:
        return 0
    doubled: int = 2 ** min(failures - FREE_FAILURES - 1, 16)    # a whole number: exponent >= 0
    return min(doubled, MAX_DELAY)


class FailureLimiter:
    def __init__(self, max_failures: int, address_max_failures: int, window: int) -> None:
        self.max_failures = max_failures                  # 0: no limits at all
        self.address_max_failures = address_max_failures  # 0: no per-address limit
        self.window = window

    def begin(self, kind: str, account: str, address: str | None) -> Attempt | None:
        """Take a slot for an attempt on ``kind:account`` from ``address``, or raise
        429 without checking anything. Returns the Attempt to ``end``."""
        if not self.max_failures:
            return None
        address = address or "-"
        pair, by_address = _key("pair", kind, account, address), _key("address", address)
        limits = [(pair, self.max_failures)]
        if self.address_max_failures:
            limits.append((by_address, self.address_max_failures))
        now = int(time.time())
        taken: list[str] = []
        for key, limit in limits:
            if self._take(key, limit, now) is None:
                self._give_back(taken)
                raise self._refusal(key, limit, now, "address" if key == by_address else "account")
            taken.append(key)
        return Attempt(pair, _key("account", kind, account), tuple(taken))

    def end(self, attempt: Attempt | None, succeeded: bool) -> int:
        """Settle an attempt. A success gives its slots back (and clears the
        address's delay for the account); a failure counts against the account
        and returns the seconds the address must now wait (0: none)."""
        if attempt is None:
            return 0
        if succeeded:
            AuthAttempt.delete().where(AuthAttempt.key == attempt.pair).execute()
            self._give_back([key for key in attempt.taken if key != attempt.pair])
            return 0
        now = int(time.time())
        failures = self._take(attempt.account, None, now)
        assert failures is not None         # no limit: never refused
        delay = min(delay_after(failures), self.window)
        if delay:
            (AuthAttempt.update(retry_at=now + delay)
             .where(AuthAttempt.key == attempt.pair).execute())
        # Rows whose window and delay are over count for nothing; clearing them
        # here keeps the table small.
        (AuthAttempt.delete()
         .where(AuthAttempt.window_start <= now - self.window, AuthAttempt.retry_at <= now)
         .execute())
        return delay

    def _take(self, key: str, limit: int | None, now: int) -> int | None:
        """Count one attempt against ``key`` in one atomic upsert: a new window
        when the last one is over; with a ``limit``, only while the key is under
        it and not waiting. Returns the new count, or None when refused."""
        row = AuthAttempt
        over = row.window_start <= now - self.window
        update = {row.failures: peewee.Case(None, [(over, 1)], row.failures + 1),
                  row.window_start: peewee.Case(None, [(over, now)], row.window_start)}
        condition = None if limit is None else (
            (row.retry_at <= now) & (over | (row.failures < limit)))
        query = (row.insert(key=key, failures=1, window_start=now, retry_at=0)
                 .on_conflict(conflict_target=[row.key], update=update, where=condition)
                 .returning(row.failures).tuples())
        counts: list[int] = [count for (count,) in query.execute()]
        return counts[0] if counts else None

    @staticmethod
    def _give_back(keys: list[str]) -> None:
        if keys:
            (AuthAttempt.update(failures=AuthAttempt.failures - 1)
             .where(AuthAttempt.key.in_(keys), AuthAttempt.failures > 0).execute())

    def _refusal(self, key: str, limit: int, now: int, limit_name: str) -> TooManyFailures:
        """429 with the seconds until ``key`` may try again: the end of its delay,
        or of its window when it is at its limit."""
        row = AuthAttempt.get_or_none(AuthAttempt.key == key)
        wait = 1                   # cleared meanwhile: try again at once
        if row is not None:
            wait = max(wait, row.retry_at - now)
            if row.failures >= limit:
                wait = max(wait, row.window_start + self.window - now)
        return TooManyFailures(wait, limit_name)
