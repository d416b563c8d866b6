"""Webhook delivery: ``restsvc deliver`` (started by ``restsvc serve`` unless
``svc.webhooks.deliver-in-serve: false``).

Each pass of the worker:

1. hands out new events: per subscription, in one transaction that locks
   its row (PostgreSQL ``FOR UPDATE SKIP LOCKED``: another instance takes the
   next subscription meanwhile; SQLite: the write lock), the events after the
   subscription's ``after`` that it wants become delivery rows and ``after``
   moves on -- each event is handed out once per subscription;
2. claims due deliveries: one statement marks them leased for twice the
   timeout and counts the attempt (PostgreSQL ``FOR UPDATE SKIP LOCKED``, so
   two instances never claim one row; SQLite: the write lock);
3. POSTs each: the event's JSON, ``Svc-Event-Id``, ``Svc-Signature``
   (webhooks.py). A 2xx answer ends the delivery (its row goes); anything
   else is retried after ``retry-initial-delay`` x 2^(attempt-1), half of it
   random (jitter), until ``retry-period`` has passed since the first attempt;
   then the row is a dead letter (``GET /rest/webhooks/<id>/dead-letters``,
   replayed by ``POST .../dead-letters/replay``).

A worker killed mid-delivery leaves its rows leased; when the lease runs out
another pass claims them again. Delivery is therefore at least once: a
receiver de-duplicates by ``Svc-Event-Id``.

The connection goes to the address that was checked (webhooks.check_address),
not to a second lookup; redirects are not followed; at most ``MAX_ANSWER``
bytes of an answer are read.
"""
import http.client
import logging
import os
import random
import socket
import ssl
import threading
import time

import peewee

from ..db import database_proxy, is_sqlite, release, write_transaction
from ..errors import BadRequest
from ..jsonio import dumps, loads
from . import outbox, webhooks
from .webhooks import WebhookSubscription

log = logging.getLogger("restsvc")
MAX_ANSWER = 64 << 10
BATCH = 20
PRUNE_EVERY = 3600


class WebhookDelivery(peewee.Model):
    seq = peewee.BigAutoField()
    subscription = peewee.CharField(max_length=255)
    eventId = peewee.BigIntegerField()
    state = peewee.CharField(max_length=16, default="pending")     # pending or dead
    attempts = peewee.IntegerField(default=0)
    firstAttempt = peewee.DoubleField()             # epoch seconds: the retry period's start
    nextAttempt = peewee.DoubleField()
    leaseUntil = peewee.DoubleField(null=True)      # claimed by a worker until then
    lastStatus = peewee.IntegerField(null=True)
    lastError = peewee.CharField(max_length=255, null=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_webhook_delivery"
        indexes = ((("subscription", "eventId"), True), (("state", "nextAttempt"), False))


class Deliverer:
    def __init__(self, settings, database):
        self.settings = settings
        self.database = database
        self._pruned = 0.0

    def run(self, stop):
        """Pass after pass until ``stop`` (a threading.Event) is set."""
        while not stop.is_set():
            try:
                busy = self.step()
            except peewee.OperationalError as exc:      # the database is away: try again
                log.warning("webhook delivery: %s", exc)
                busy = False
            finally:
                release(self.database)
            if not busy:
                stop.wait(self.settings.events_poll_interval)

    def step(self, now=None):
        """One pass; whether it delivered anything."""
        now = time.time() if now is None else now
        if now - self._pruned > PRUNE_EVERY:
            self._pruned = now
            outbox.prune(self.database, self.settings.events_retention)
        self.hand_out(now)
        claimed = self.claim(now)
        for delivery in claimed:
            self.deliver(*delivery)
        return bool(claimed)

    # -- 1. hand out ---------------------------------------------------------------
    def hand_out(self, now):
        outbox.assign(self.database)
        subscriptions = WebhookSubscription.select(
            WebhookSubscription.id, WebhookSubscription.after, WebhookSubscription.entities)
        for key, after, entities in subscriptions.tuples():
            if not outbox.read(self.database, after, loads(entities), 1):
                continue        # nothing new: no lock taken
            with write_transaction(self.database):
                query = WebhookSubscription.select().where(WebhookSubscription.id == key)
                if not is_sqlite(self.database):
                    query = query.for_update("FOR UPDATE SKIP LOCKED")
                sub = query.first()
                if sub is None:
                    continue
                events = outbox.read(self.database, sub.after, loads(sub.entities), 500)
                if not events:
                    continue
                kinds = set(loads(sub.kinds))
                rows = [{"subscription": key, "eventId": event["id"], "firstAttempt": now,
                         "nextAttempt": now} for event in events if event["kind"] in kinds]
                if rows:
                    WebhookDelivery.insert_many(rows).execute()
                WebhookSubscription.update(after=events[-1]["id"]).where(
                    WebhookSubscription.id == key).execute()

    # -- 2. claim ------------------------------------------------------------------
    def claim(self, now):
        due = WebhookDelivery.select(WebhookDelivery.seq).where(
            (WebhookDelivery.state == "pending") & (WebhookDelivery.nextAttempt <= now)).limit(1)
        if due.first() is None:        # the common case, without the write lock
            return []
        skip = "" if is_sqlite(self.database) else " FOR UPDATE SKIP LOCKED"
        p = self.database.param
        sql = (f'UPDATE {WebhookDelivery._meta.table_name} SET "leaseUntil" = {p}, '
               f'attempts = attempts + 1 WHERE seq IN (SELECT seq FROM '
               f'{WebhookDelivery._meta.table_name} WHERE state = \'pending\' AND '
               f'"nextAttempt" <= {p} AND ("leaseUntil" IS NULL OR "leaseUntil" < {p}) '
               f'ORDER BY "nextAttempt" LIMIT {BATCH}{skip}) '
               f'RETURNING seq, subscription, "eventId", attempts, "firstAttempt"')
        lease = now + 2 * self.settings.webhooks_timeout + 1
        with write_transaction(self.database):
            return self.database.execute_sql(sql, (lease, now, now)).fetchall()

    # -- 3. deliver ----------------------------------------------------------------
    def deliver(self, seq, key, event_id, attempts, first):
        mine = WebhookDelivery.seq == seq
        sub = WebhookSubscription.get_or_none(WebhookSubscription.id == key)
        if sub is None:
            WebhookDelivery.delete().where(mine).execute()
            return
        event = outbox.read_ids([event_id]).get(event_id)
        if event is None:
            WebhookDelivery.update(state="dead", leaseUntil=None,
                                   lastError="the event is no longer kept").where(mine).execute()
            return
        release(self.database)      # no connection held while the receiver answers
        status, error = post(sub.url, sub.secret, event, self.settings)
        if status is not None and 200 <= status < 300:
            WebhookDelivery.delete().where(mine).execute()
            return
        delay = self.settings.webhooks_retry_initial_delay * 2 ** min(attempts - 1, 30)
        delay = delay / 2 + random.uniform(0, delay / 2)
        now = time.time()
        dead = now + delay > first + self.settings.webhooks_retry_period
        WebhookDelivery.update(state="dead" if dead else "pending", nextAttempt=now + delay,
                               leaseUntil=None, lastStatus=status,
                               lastError=(error or "")[:255] or None).where(mine).execute()


def dead_letters(subscription, limit=1000):
    """A subscription's dead letters, oldest event first, each with its event
    (None once retention has pruned it)."""
    dead = (WebhookDelivery.subscription == subscription) & (WebhookDelivery.state == "dead")
    rows = list(WebhookDelivery.select().where(dead).order_by(WebhookDelivery.eventId).limit(limit))
    events = outbox.read_ids(row.eventId for row in rows)
    return [{"eventId": row.eventId, "attempts": row.attempts, "lastStatus": row.lastStatus,
             "lastError": row.lastError, "event": events.get(row.eventId)} for row in rows]


def replay(subscription):
    """A subscription's dead letters due again, their attempts and retry period
    starting anew; how many."""
    now = time.time()
    return WebhookDelivery.update(state="pending", attempts=0, firstAttempt=now, nextAttempt=now,
                                  leaseUntil=None).where(
        (WebhookDelivery.subscription == subscription) & (WebhookDelivery.state == "dead")
    ).execute()


def post(url, secret, event, settings):
    """(status or None, what went wrong or None) of one delivery."""
    body = dumps(event).encode()
    try:
        scheme, host, port, address = webhooks.check_address(
            url, settings.webhooks_allow_private)
    except BadRequest as exc:
        return None, exc.details
    split = url.split("/", 3)
    path = "/" + (split[3] if len(split) > 3 else "")
    connection = (_Https if scheme == "https" else _Http)(host, port, address,
                                                          settings.webhooks_timeout)
    headers = {"Content-Type": "application/json", "User-Agent": "restsvc-webhooks",
               "Svc-Event-Id": str(event["id"]),
               "Svc-Signature": webhooks.signature(secret, body, time.time())}
    try:
        connection.request("POST", path.split("#")[0], body, headers)
        answer = connection.getresponse()
        answer.read(MAX_ANSWER)
        return answer.status, None if answer.status < 300 else f"answered {answer.status}"
    except (OSError, http.client.HTTPException) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()


class _Http(http.client.HTTPConnection):
    """Connects to the address that was checked, whatever the name resolves to now."""

    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self):
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _Https(http.client.HTTPSConnection):
    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self):
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def run_worker(settings, database, stop=None, parent=None):
    """Passes until ``stop`` is set (or, given ``parent``, that process is gone)."""
    stop = stop or threading.Event()
    if parent is not None:
        def watch():
            while not stop.wait(1):
                if os.getppid() != parent:
                    stop.set()
        threading.Thread(target=watch, daemon=True).start()
    Deliverer(settings, database).run(stop)
