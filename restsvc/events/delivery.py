"""Webhook delivery: ``restsvc deliver`` (started by the gunicorn master of
``restsvc serve`` unless ``svc.webhooks.deliver-in-serve: false``; see
supervisor.py).

Each pass of the worker:

1. hands out new events: the next ``BATCH`` events after the smallest
   ``after`` of the subscriptions are read once (those after the window's
   end get a window of their own); for the subscriptions that
   want some of them, in one transaction that locks their rows (PostgreSQL
   ``FOR UPDATE SKIP LOCKED``: a row another instance holds is left to it;
   SQLite: the write lock), those after each one's ``after`` become delivery
   rows and ``after`` moves on -- each event is handed out once per
   subscription; those that want none just move on, in one statement. A
   filtered subscription's events are judged then (matching.py: its filter
   compiled once, the window's rows loaded once for all of them), and the
   verdict is kept on the delivery row (``match``, sent as ``"match"``);
2. claims due deliveries, as many as it has free places
   (``svc.webhooks.max-parallel-deliveries``), at most one per subscription
   and none of a subscription with an attempt in flight here: each is marked
   leased for twice the timeout and its attempt counted (PostgreSQL ``FOR
   UPDATE SKIP LOCKED``, so two instances never claim one row; SQLite: the
   write lock);
3. POSTs each on a thread of its own (sender.py: the event's JSON,
   ``Svc-Event-Id``, ``Svc-Signature``; the whole attempt bounded by
   ``svc.webhooks.timeout``), so a slow receiver holds one place and never
   the deliveries of other subscriptions. A 2xx answer ends the delivery
   (its row goes); anything else -- an error answer, no answer in time, an
   address refused, any exception of the attempt -- is that delivery's
   failure: retried after ``retry-initial-delay`` x 2^(attempt-1), half of it
   random (jitter), until ``retry-period`` has passed since the first
   attempt; then the row is a dead letter (``GET
   /rest/webhooks/<id>/dead-letters``, replayed by ``POST
   .../dead-letters/replay``). An error of a pass itself (the database away,
   a subscription row that cannot be read) is logged and the next pass
   tries again: the worker does not die of it.

A worker killed mid-delivery leaves its rows leased; when the lease runs out
another pass claims them again. Delivery is therefore at least once: a
receiver de-duplicates by ``Svc-Event-Id``.
"""
from __future__ import annotations

import logging
import os
import random
import signal
import threading
import time
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import peewee

from ..data.access import Access
from ..db import is_sqlite, release, write_transaction, execute
from ..jsonio import loads
from . import outbox, sender
from .matching import Matcher, Verdicts, compiled, full_permissions
from .webhooks import WebhookDelivery, WebhookSubscription, marked

if TYPE_CHECKING:
    from ..model.metadata import Metadata
    from ..settings import Settings

log = logging.getLogger("restsvc")
PRUNE_EVERY = 3600
BATCH = 500             # events handed out per subscription and pass
# Signals that stop ``restsvc deliver``: never handled by Python code (see run_process).
STOP_SIGNALS = frozenset((signal.SIGTERM, signal.SIGINT, signal.SIGQUIT))

_SKIP_LOCKED: Any = "FOR UPDATE SKIP LOCKED"    # peewee takes the clause (its stubs say bool)


class Claimed(NamedTuple):
    """A delivery leased by this worker (the row ``_claim_sql`` returns)."""
    seq: int
    subscription: str
    event_id: int
    attempts: int           # this attempt's number
    first: float            # the first attempt's time (epoch seconds)
    match: bool | None      # a filtered subscription's verdict (None: no filter)


class _Subscription(NamedTuple):
    """What a pass reads of a subscription's row."""
    key: str
    after: int
    entities: frozenset[str]
    kinds: frozenset[str]
    matcher: Matcher | None


class _Pick(NamedTuple):
    """Which events of a pass's window a subscription gets."""
    window: list[outbox.Event]
    judged: Verdicts | None
    now: float

    def rows(self, sub: _Subscription, after: int) -> list[dict[str, object]]:
        """The delivery rows of the window's events after ``after`` that ``sub``
        wants (its entities and kinds; with a filter, those it lets through)."""
        entities, kinds, matcher, judged = sub.entities, sub.kinds, sub.matcher, self.judged
        rows: list[dict[str, object]] = []
        for event in self.window:
            if event["id"] <= after or event["entity"] not in entities \
                    or event["kind"] not in kinds:
                continue
            match = None
            if matcher is not None and judged is not None:
                match = judged.verdict(matcher, event)
                if match is None:
                    continue
            rows.append({"subscription": sub.key, "eventId": event["id"],
                         "firstAttempt": self.now, "nextAttempt": self.now, "match": match})
        return rows


class Deliverer:
    def __init__(self, settings: Settings, database: peewee.Database,
                 metadata: Metadata) -> None:
        self.settings = settings
        self.database = database
        self.access = Access(metadata, full_permissions(metadata), {}, database, {})
        self._matchers: dict[str, tuple[str, Matcher]] = {}    # subscription -> (text, compiled)
        self.places = settings.webhooks_max_parallel
        self._pruned = 0.0
        self._lock = threading.Lock()
        self._busy: dict[str, Future[None]] = {}    # subscription -> its attempt in flight
        self._pool = ThreadPoolExecutor(self.places, thread_name_prefix="webhook-delivery")

    def run(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set; then the attempts in flight
        end (each within the timeout) and the threads go."""
        try:
            while not stop.is_set():
                try:
                    started = self.step(wait=False)
                except peewee.OperationalError as exc:      # the database is away: try again
                    log.warning("webhook delivery: %s", exc)
                    started = False
                except Exception:       # noqa: BLE001  (a pass's error is never the worker's end)
                    log.exception("webhook delivery: a pass failed; the next one tries again")
                    started = False
                finally:
                    release(self.database)
                if not started:
                    stop.wait(self.settings.events_poll_interval)
        finally:
            self.close()

    def step(self, now: float | None = None, wait: bool = True) -> bool:
        """One pass; whether it started any delivery. ``wait``: return once
        those attempts have ended (tests step the worker this way)."""
        now = time.time() if now is None else now
        if now - self._pruned > PRUNE_EVERY:
            self._pruned = now
            outbox.prune(self.database, self.settings.events_retention)
        self.hand_out(now)
        started = [self._start(row) for row in self.claim(now)]
        if wait and started:
            futures.wait(started)
        return bool(started)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # -- 1. hand out ---------------------------------------------------------------
    def hand_out(self, now: float) -> None:
        """The next events (at most ``BATCH``, read once for the subscriptions
        they are new to) become delivery rows of those that want them; one that
        wants none of them just moves on (one statement for all of those).
        Subscriptions far behind the others get a window of their own, so they
        hold no one up."""
        outbox.assign(self.database)
        remaining = []
        for row in WebhookSubscription.select():
            try:
                remaining.append(self.subscription(row))
            except Exception:       # noqa: BLE001  (one subscription's bad row stops no other)
                log.exception("webhook delivery: subscription %s cannot be read", row.id)
        while remaining:
            window = outbox.read(self.database, min(sub.after for sub in remaining),
                                 list({name for sub in remaining for name in sub.entities}),
                                 BATCH)
            if not window:
                return
            last = window[-1]["id"]
            self._hand_out_window([sub for sub in remaining if sub.after < last], window, now)
            remaining = [sub for sub in remaining if sub.after >= last]

    def _hand_out_window(self, subscriptions: list[_Subscription], window: list[outbox.Event],
                         now: float) -> None:
        """``window``'s events to ``subscriptions`` (each ``after`` before its end)."""
        matchers = [sub.matcher for sub in subscriptions if sub.matcher is not None]
        pick = _Pick(window, Verdicts(self.access, window, matchers) if matchers else None, now)
        wanting: dict[str, tuple[int, list[dict[str, object]]]] = {}
        idle: list[str] = []
        for sub in subscriptions:
            rows = pick.rows(sub, sub.after)
            if rows:
                wanting[sub.key] = (sub.after, rows)
            else:
                idle.append(sub.key)
        if wanting:
            self._hand_out_to(wanting, pick)
        _move_on(idle, window[-1]["id"])

    def subscription(self, row: WebhookSubscription) -> _Subscription:
        """A subscription's row as a pass reads it, its filter compiled once
        (again only when it changes)."""
        entities, text = loads(row.entities), row.filterJson
        matcher = None
        if text is not None:
            known = self._matchers.get(row.id)
            if known is None or known[0] != text:
                meta = self.access.metadata.entity(entities[0])
                if meta is None:
                    raise ValueError(f"entity {entities[0]} is gone")
                known = self._matchers[row.id] = (text, compiled(meta, loads(text),
                                                                 self.access.permissions))
            matcher = known[1]
        return _Subscription(row.id, row.after, frozenset(entities), frozenset(loads(row.kinds)),
                             matcher)

    def _hand_out_to(self, wanting: dict[str, tuple[int, list[dict[str, object]]]],
                     pick: _Pick) -> None:
        """The delivery rows of the subscriptions ``wanting`` (key -> the
        ``after`` they were picked after, those rows), in one transaction that
        locks their rows (their ``after`` as it is then decides what is new;
        PostgreSQL: one locked by another instance is left to it)."""
        with write_transaction(self.database):
            query = WebhookSubscription.select().where(WebhookSubscription.id.in_(list(wanting)))
            if not is_sqlite(self.database):
                query = query.for_update(_SKIP_LOCKED)
            rows: list[dict[str, object]] = []
            moved: list[str] = []
            for row in query:
                after, picked = wanting[row.id]
                try:
                    rows += picked if row.after == after else pick.rows(
                        self.subscription(row), row.after)
                except Exception:   # noqa: BLE001  (one subscription's bad row stops no other)
                    log.exception("webhook delivery: events of subscription %s not handed "
                                  "out", row.id)
                    continue
                moved.append(row.id)
            for start in range(0, len(rows), 500):
                WebhookDelivery.insert_many(rows[start:start + 500]).execute()
            _move_on(moved, pick.window[-1]["id"])

    # -- 2. claim ------------------------------------------------------------------
    def claim(self, now: float) -> list[Claimed]:
        """Due deliveries now leased here: one per subscription, as many as
        there are free places, none of a subscription with an attempt in flight."""
        with self._lock:
            busy = [key for key, future in self._busy.items() if not future.done()]
        free = self.places - len(busy)
        if free <= 0:
            return []
        due = ((WebhookDelivery.state == "pending") & (WebhookDelivery.nextAttempt <= now)
               & (WebhookDelivery.leaseUntil.is_null() | (WebhookDelivery.leaseUntil < now)))
        if busy:
            due &= WebhookDelivery.subscription.not_in(busy)
        query = (WebhookDelivery.select(WebhookDelivery.subscription).where(due)
                 .group_by(WebhookDelivery.subscription)
                 .order_by(peewee.fn.MIN(WebhookDelivery.nextAttempt)).limit(free))
        keys = [key for key, in cast(Iterable[tuple[str]], query.tuples())]
        if not keys:        # the common case, without the write lock
            return []
        lease = now + 2 * self.settings.webhooks_timeout + 1
        sql = _claim_sql(self.database)
        with write_transaction(self.database):
            return [Claimed(*row) for key in keys
                    for row in execute(self.database, sql, (lease, key, now, now)).fetchall()]

    # -- 3. deliver ----------------------------------------------------------------
    def _start(self, row: Claimed) -> Future[None]:
        future = self._pool.submit(self._attempt, row)
        with self._lock:
            self._busy[row.subscription] = future
        future.add_done_callback(lambda done: self._forget(row.subscription, done))
        return future

    def _forget(self, key: str, future: Future[None]) -> None:
        with self._lock:
            if self._busy.get(key) is future:
                del self._busy[key]

    def _attempt(self, row: Claimed) -> None:
        """One delivery on a thread of the pool: whatever goes wrong is its failure."""
        try:
            self.deliver(row)
        except Exception as exc:        # noqa: BLE001  (the delivery's failure, not the worker's)
            log.warning("webhook delivery %s of event %s to %s failed", row.seq, row.event_id,
                        row.subscription, exc_info=True)
            try:
                self._failed(row, None, f"{type(exc).__name__}: {exc}")
            except Exception:       # noqa: BLE001  (its lease runs out; it is claimed again)
                log.warning("webhook delivery %s: the failure is not recorded", row.seq,
                            exc_info=True)
        finally:
            release(self.database)

    def deliver(self, row: Claimed) -> None:
        mine = WebhookDelivery.seq == row.seq
        sub = WebhookSubscription.get_or_none(WebhookSubscription.id == row.subscription)
        if sub is None:
            WebhookDelivery.delete().where(mine).execute()
            return
        event = marked(outbox.read_ids([row.event_id]).get(row.event_id), row.match)
        if event is None:
            WebhookDelivery.update(state="dead", leaseUntil=None,
                                   lastError="the event is no longer kept").where(mine).execute()
            return
        release(self.database)      # no connection held while the receiver answers
        status, error = sender.post(sub.url, sub.secret, event, self.settings.webhooks_timeout,
                                    self.settings.webhooks_allow_private)
        if status is not None and 200 <= status < 300:
            WebhookDelivery.delete().where(mine).execute()
            return
        self._failed(row, status, error)

    def _failed(self, row: Claimed, status: int | None, error: str | None) -> None:
        """Retry later with backoff and jitter, or a dead letter once the retry period is over."""
        delay = self.settings.webhooks_retry_initial_delay * 2 ** min(row.attempts - 1, 30)
        delay = delay / 2 + random.uniform(0, delay / 2)
        now = time.time()
        dead = now + delay > row.first + self.settings.webhooks_retry_period
        WebhookDelivery.update(state="dead" if dead else "pending", nextAttempt=now + delay,
                               leaseUntil=None, lastStatus=status,
                               lastError=(error or "")[:255] or None).where(
            WebhookDelivery.seq == row.seq).execute()


def _move_on(keys: list[str], last: int) -> None:
    """The subscriptions ``keys`` have been handed the events up to ``last``."""
    for start in range(0, len(keys), 500):
        WebhookSubscription.update(after=last).where(
            WebhookSubscription.id.in_(keys[start:start + 500])
            & (WebhookSubscription.after < last)).execute()


def _claim_sql(database: peewee.Database) -> str:
    """Lease the next due delivery of one subscription; its row (Claimed)."""
    skip = "" if is_sqlite(database) else " FOR UPDATE SKIP LOCKED"
    p, table = database.param, WebhookDelivery._meta.table_name
    return (f'UPDATE {table} SET "leaseUntil" = {p}, attempts = attempts + 1 '
            f'WHERE seq IN (SELECT seq FROM {table} WHERE subscription = {p} AND '
            f'state = \'pending\' AND "nextAttempt" <= {p} AND '
            f'("leaseUntil" IS NULL OR "leaseUntil" < {p}) ORDER BY "nextAttempt", seq '
            f'LIMIT 1{skip}) RETURNING seq, subscription, "eventId", attempts, "firstAttempt", '
            f'match')


def block_stop_signals() -> None:
    """Block SIGTERM, SIGINT and SIGQUIT in this thread and every thread it
    starts from now on: call it before the process starts any (run_process
    takes them with ``sigtimedwait``; a thread that has them unblocked would
    die of them by default)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def run_process(settings: Settings, database: peewee.Database, metadata: Metadata,
                parent: int | None = None) -> int:
    """``restsvc deliver`` as a process: passes on a thread until SIGTERM,
    SIGINT or SIGQUIT (or, given ``parent``, until that process is gone);
    then it stops once, letting the attempts in flight end.

    Those signals are blocked (``block_stop_signals``, before the process
    started any thread) and taken here with ``sigtimedwait``: no Python signal
    handler runs, so none can interrupt code that holds a lock (an Event's, a
    logging handler's) and wait for it forever, however many SIGTERMs come.
    The exit code is 1 when the worker thread ended by itself."""
    block_stop_signals()
    stop = threading.Event()
    worker = threading.Thread(target=Deliverer(settings, database, metadata).run, args=(stop,),
                              name="webhook-delivery")
    worker.start()
    while worker.is_alive():
        if signal.sigtimedwait(STOP_SIGNALS, 1.0) is not None:
            break
        if parent is not None and os.getppid() != parent:
            log.warning("webhook delivery: the server is gone; stopping")
            break
    else:
        return 1
    stop.set()
    worker.join()
    return 0
