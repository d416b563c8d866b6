"""Webhook delivery: ``restsvc deliver`` (started by the gunicorn master of
``restsvc serve`` unless ``svc.webhooks.deliver-in-serve: false``; see
supervisor.py).

Each pass of the worker:

1. hands out new events (handout.py): they become delivery rows of the
   subscriptions that want them (a filtered one's verdict kept on the row,
   ``match``, sent as the event's ``"match"``), each event once per
   subscription;
2. claims due deliveries of as many subscriptions as it has free places
   (``svc.webhooks.max-parallel-deliveries``), none of a subscription with
   attempts in flight here, and of each subscription up to
   ``PER_SUBSCRIPTION`` of them, oldest first, in one statement: each is
   marked leased for twice the timeout and its attempt counted (PostgreSQL
   ``FOR UPDATE SKIP LOCKED``, so two instances never claim one row;
   SQLite: the write lock);
3. POSTs a subscription's claimed deliveries in order, one after the other,
   on a thread of its own (sender.py: the event's JSON, ``Svc-Event-Id``,
   ``Svc-Signature``; each attempt bounded by ``svc.webhooks.timeout``), so a
   slow receiver holds one place and never the deliveries of other
   subscriptions, and a fast one gets a batch per pass: the events read in
   one query, the delivered rows removed in one statement, the next pass at
   once when a batch ends. A batch stops at its first failure, or when a
   further attempt could outlast the lease: the rest are given back
   unattempted. A 2xx answer ends the delivery
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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple, cast

import peewee

from ..db import is_sqlite, release, write_transaction, execute
from . import outbox, sender
from .handout import HandOut
from .webhooks import WebhookDelivery, WebhookSubscription, marked

if TYPE_CHECKING:
    from ..model.metadata import Metadata
    from ..settings import Settings

log = logging.getLogger("restsvc")
PRUNE_EVERY = 3600
PER_SUBSCRIPTION = 50   # deliveries of one subscription claimed and sent together, in order
# Signals that stop ``restsvc deliver``: never handled by Python code (see run_process).
STOP_SIGNALS = frozenset((signal.SIGTERM, signal.SIGINT, signal.SIGQUIT))



class Claimed(NamedTuple):
    """A delivery leased by this worker (the row ``_claim_sql`` returns)."""
    seq: int
    subscription: str
    event_id: int
    attempts: int           # this attempt's number
    first: float            # the first attempt's time (epoch seconds)
    match: bool | None      # a filtered subscription's verdict (None: no filter)


class Deliverer:
    def __init__(self, settings: Settings, database: peewee.Database,
                 metadata: Metadata) -> None:
        self.settings = settings
        self.database = database
        self.hand_out = HandOut(database, metadata)
        self.places = settings.webhooks_max_parallel
        self._pruned = 0.0
        self._lock = threading.Lock()
        self._busy: dict[str, Future[None]] = {}    # subscription -> its attempts in flight
        self._pool = ThreadPoolExecutor(self.places, thread_name_prefix="webhook-delivery")
        self._ended = threading.Event()     # a batch ended: the next pass need not wait

    def run(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set; then the attempts in flight
        end (each within the timeout) and the threads go."""
        try:
            run_passes(lambda: self.step(wait=False), stop, self.database,
                       self.settings.events_poll_interval, "webhook delivery", self._ended)
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
        started = [self._start(batch) for batch in self.claim(now)]
        if wait and started:
            futures.wait(started)
        return bool(started)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        try:
            self.hand_out.write_idle(time.time())
        except Exception:       # noqa: BLE001  (the next worker judges those events again)
            log.exception("webhook delivery: where idle subscriptions are was not written")

    # -- 2. claim ------------------------------------------------------------------
    def claim(self, now: float) -> list[list[Claimed]]:
        """Due deliveries now leased here, a batch per subscription in order:
        as many subscriptions as there are free places, none with attempts in flight."""
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
            batches = [sorted(Claimed(*row) for row in execute(
                self.database, sql, (lease, key, now, now)).fetchall()) for key in keys]
        return [batch for batch in batches if batch]

    # -- 3. deliver ----------------------------------------------------------------
    def _start(self, batch: list[Claimed]) -> Future[None]:
        key = batch[0].subscription
        future = self._pool.submit(self._attempt, batch)
        with self._lock:
            self._busy[key] = future
        future.add_done_callback(lambda done: self._forget(key, done))
        return future

    def _forget(self, key: str, future: Future[None]) -> None:
        with self._lock:
            if self._busy.get(key) is future:
                del self._busy[key]
        self._ended.set()

    def _attempt(self, batch: list[Claimed]) -> None:
        """A subscription's batch on a thread of the pool: whatever goes wrong
        is the failure of the delivery it happened in."""
        try:
            self.deliver(batch)
        except Exception:       # noqa: BLE001  (the database away: the lease runs out, claimed again)
            log.warning("webhook deliveries of %s: the batch stopped", batch[0].subscription,
                        exc_info=True)
        finally:
            release(self.database)

    def deliver(self, batch: list[Claimed]) -> None:
        """Send ``batch`` (one subscription's, in order) until a delivery fails
        or the lease would run out before a further attempt ends; the rows of
        those delivered go in one statement, those not attempted are given back."""
        sub = WebhookSubscription.get_or_none(WebhookSubscription.id == batch[0].subscription)
        if sub is None:
            _remove([row.seq for row in batch])
            return
        events = outbox.read_ids([row.event_id for row in batch])
        release(self.database)      # no connection held while the receiver answers
        last_start = time.time() + self.settings.webhooks_timeout     # the lease's end less one attempt
        delivered: list[int] = []
        try:
            for position, row in enumerate(batch):
                if position and time.time() > last_start:
                    _give_back(batch[position:])
                    return
                if not self._delivered(sub, row, events.get(row.event_id)):
                    _give_back(batch[position + 1:])
                    return
                delivered.append(row.seq)
        finally:
            _remove(delivered)

    def _delivered(self, sub: WebhookSubscription, row: Claimed, stored: outbox.Event | None
                   ) -> bool:
        """One attempt of ``row``: whether it was delivered (else its failure is recorded)."""
        event = marked(stored, row.match)
        if event is None:
            WebhookDelivery.update(state="dead", leaseUntil=None,
                                   lastError="the event is no longer kept").where(
                WebhookDelivery.seq == row.seq).execute()
            return False
        try:
            status, error = sender.post(sub.url, sub.secret, event, self.settings.webhooks_timeout,
                                        self.settings.webhooks_allow_private)
        except Exception as exc:        # noqa: BLE001  (the delivery's failure, not the worker's)
            log.warning("webhook delivery %s of event %s to %s failed", row.seq, row.event_id,
                        row.subscription, exc_info=True)
            status, error = None, f"{type(exc).__name__}: {exc}"
        if status is not None and 200 <= status < 300:
            return True
        try:
            self._failed(row, status, error)
        except Exception:       # noqa: BLE001  (its lease runs out; it is claimed again)
            log.warning("webhook delivery %s: the failure is not recorded", row.seq, exc_info=True)
        return False

    def _failed(self, row: Claimed, status: int | None, error: str | None) -> None:
        """Retry later with backoff and jitter, or a dead letter once the retry period is over."""
        delay = self.settings.webhooks_retry_initial_delay * 2 ** min(row.attempts - 1, 30)
        delay = delay / 2 + random.uniform(0, delay / 2)
        now = time.time()
        dead = now + delay > row.first + self.settings.webhooks_retry_period
        with write_transaction(self.database):
            WebhookDelivery.update(state="dead" if dead else "pending", nextAttempt=now + delay,
                                   leaseUntil=None, lastStatus=status,
                                   lastError=(error or "")[:255] or None).where(
                WebhookDelivery.seq == row.seq).execute()


# The delivery threads' writes queue for SQLite's write lock in the process
# (writequeue.py) as every other write does: one thread of the process then
# polls for it against the API's workers, not each sender thread on its own
# (a 30-minute soak saw the removal of a delivered batch wait up to 1.5 s).
def _remove(seqs: list[int]) -> None:
    """The delivery rows ``seqs`` (delivered, or of a subscription gone) go."""
    if seqs:
        with write_transaction(WebhookDelivery._meta.database):
            WebhookDelivery.delete().where(WebhookDelivery.seq.in_(seqs)).execute()


def _give_back(rows: list[Claimed]) -> None:
    """Claimed deliveries not attempted: free to claim again, their attempt not counted."""
    if rows:
        with write_transaction(WebhookDelivery._meta.database):
            WebhookDelivery.update(leaseUntil=None, attempts=WebhookDelivery.attempts - 1).where(
                WebhookDelivery.seq.in_([row.seq for row in rows])).execute()


def run_passes(step: Callable[[], bool], stop: threading.Event, database: peewee.Database,
               interval: float, what: str, woken: threading.Event | None = None) -> None:
    """``step()`` pass after pass until ``stop`` is set, waiting ``interval``
    seconds after a pass that found nothing to do (or until ``woken`` is set).
    A pass's error is logged (``what`` names the worker) and the next pass
    tries again."""
    while not stop.is_set():
        try:
            busy = step()
        except peewee.OperationalError as exc:      # the database is away: try again
            log.warning("%s: %s", what, exc)
            busy = False
        except Exception:       # noqa: BLE001  (a pass's error is never the worker's end)
            log.exception("%s: a pass failed; the next one tries again", what)
            busy = False
        finally:
            release(database)
        if not busy and woken is None:
            stop.wait(interval)
        elif not busy and woken is not None:
            woken.wait(interval)
            woken.clear()


def _claim_sql(database: peewee.Database) -> str:
    """Lease the next due deliveries of one subscription (``PER_SUBSCRIPTION``); their rows (Claimed)."""
    skip = "" if is_sqlite(database) else " FOR UPDATE SKIP LOCKED"
    p, table = database.param, WebhookDelivery._meta.table_name
    return (f'UPDATE {table} SET "leaseUntil" = {p}, attempts = attempts + 1 '
            f'WHERE seq IN (SELECT seq FROM {table} WHERE subscription = {p} AND '
            f'state = \'pending\' AND "nextAttempt" <= {p} AND '
            f'("leaseUntil" IS NULL OR "leaseUntil" < {p}) ORDER BY "nextAttempt", seq '
            f'LIMIT {PER_SUBSCRIPTION}{skip}) RETURNING seq, subscription, "eventId", attempts, "firstAttempt", '
            f'match')


def block_stop_signals() -> None:
    """Block SIGTERM, SIGINT and SIGQUIT in this thread and every thread it
    starts from now on: call it before the process starts any (run_process
    takes them with ``sigtimedwait``; a thread that has them unblocked would
    die of them by default)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def run_process(settings: Settings, database: peewee.Database, metadata: Metadata,
                parent: int | None = None,
                others: Sequence[Callable[[threading.Event], None]] = ()) -> int:
    """``restsvc deliver`` as a process: passes on a thread until SIGTERM,
    SIGINT or SIGQUIT (or, given ``parent``, until that process is gone);
    then it stops once, letting the attempts in flight end. Each of
    ``others`` (the after-commit hooks' runner, aftercommit.py) runs on a
    thread of its own until the same stop.

    Those signals are blocked (``block_stop_signals``, before the process
    started any thread) and taken here with ``sigtimedwait``: no Python signal
    handler runs, so none can interrupt code that holds a lock (an Event's, a
    logging handler's) and wait for it forever, however many SIGTERMs come.
    The exit code is 1 when the worker thread ended by itself."""
    block_stop_signals()
    stop = threading.Event()
    worker = threading.Thread(target=Deliverer(settings, database, metadata).run, args=(stop,),
                              name="webhook-delivery")
    threads = [threading.Thread(target=other, args=(stop,), name="after-commit")
               for other in others]
    for thread in (worker, *threads):
        thread.start()
    while worker.is_alive():
        if signal.sigtimedwait(STOP_SIGNALS, 1.0) is not None:
            break
        if parent is not None and os.getppid() != parent:
            log.warning("webhook delivery: the server is gone; stopping")
            break
    else:
        return 1
    stop.set()
    for thread in (worker, *threads):
        thread.join()
    return 0
