"""Step 1 of a delivery pass (delivery.py): new events become delivery rows.

The next ``BATCH`` events after the smallest ``after`` of the subscriptions
are read once (those already past the window's end get a window of their
own, so a subscription far behind holds no one up). For the subscriptions
that want some of them, in one transaction that locks their rows
(PostgreSQL ``FOR UPDATE SKIP LOCKED``: a row another instance holds is
left to it; SQLite: the write lock), the events after each one's ``after``
become delivery rows and ``after`` moves on -- each event is handed out once
per subscription. Those that want none move on in this worker's memory, and
their rows every ``MOVE_ON_EVERY`` seconds (and when the worker stops), in
one statement: a pass that finds one new event writes no row of the
subscriptions it is not for. A worker that dies before writing them only
judges those events again, and hands out the same (none): a subscription's
row moves with the delivery rows it is handed, in their transaction.

A filtered subscription's events are judged here (matching.py): its filter
compiled once per process (again when it changes), the window's rows loaded
once for all of them, and the verdict kept on the delivery row (``match``,
sent as the event's ``"match"``, delivery.py).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..data.access import Access
from ..db import execute, is_sqlite, write_transaction
from ..jsonio import loads
from . import outbox
from .matching import Matcher, Verdicts, compiled, full_permissions
from .webhooks import WebhookDelivery, WebhookSubscription

if TYPE_CHECKING:
    import peewee

    from ..model.metadata import Metadata

log = logging.getLogger("restsvc")
BATCH = 500             # events handed out per pass (and window)
MOVE_ON_EVERY = 5.0     # seconds between writes of where idle subscriptions are


class _Row(NamedTuple):
    """The columns of a subscription's row a pass reads (``_COLUMNS``)."""
    key: str
    after: int
    entities: str           # JSON list
    kinds: str              # JSON list
    filter: str | None      # JSON, or none


_TABLE = WebhookSubscription._meta.table_name
# Written out, not built by peewee per pass: a pass reads every subscription.
_SELECT = f'SELECT id, "after", entities, kinds, "filterJson" FROM {_TABLE}'


def _rows(database: peewee.Database, sql: str = _SELECT, params: Sequence[object] = ()
          ) -> list[_Row]:
    return [_Row(*row) for row in execute(database, sql, params).fetchall()]


def _ids_in(keys: Sequence[str], database: peewee.Database) -> str:
    """``id IN (...)`` with a placeholder per key."""
    return f"id IN ({', '.join([database.param] * len(keys))})"


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


class HandOut:
    """Hands out new events, pass after pass, for one delivery worker."""

    def __init__(self, database: peewee.Database, metadata: Metadata) -> None:
        self.database = database
        self.access = Access(metadata, full_permissions(metadata), {}, database, {})
        # subscription -> (its row's texts, parsed: its filter compiled)
        self._known: dict[str, tuple[tuple[object, ...], _Subscription]] = {}
        # subscription -> the last event it was judged to want none up to, not yet written
        self._idle: dict[str, int] = {}
        self._written = 0.0

    def __call__(self, now: float) -> None:
        """The next events (at most ``BATCH``, read once for the subscriptions
        they are new to) become delivery rows of those that want them; one that
        wants none of them just moves on (in memory: ``write_idle``).
        Subscriptions far behind the others get a window of their own, so they
        hold no one up."""
        outbox.assign(self.database)
        remaining = []
        if now - self._written >= MOVE_ON_EVERY:
            self.write_idle(now)
        for row in _rows(self.database):
            try:
                remaining.append(self.subscription(row))
            except Exception:       # noqa: BLE001  (one subscription's bad row stops no other)
                log.exception("webhook delivery: subscription %s cannot be read", row.key)
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
        for key in idle:
            self._idle[key] = window[-1]["id"]

    def write_idle(self, now: float) -> None:
        """Write where the subscriptions that wanted none of their events are."""
        self._written = now
        by_position: dict[int, list[str]] = {}
        for key, last in self._idle.items():
            by_position.setdefault(last, []).append(key)
        self._idle = {}
        for last, keys in by_position.items():
            _move_on(self.database, keys, last)

    def subscription(self, row: _Row) -> _Subscription:
        """A subscription's row as a pass reads it: parsed, its filter
        compiled, once (again only when they change)."""
        known = self._known.get(row.key)
        texts = row[2:]         # all but the key and ``after``
        if known is None or known[0] != texts:
            entities = loads(row.entities)
            matcher = None
            if row.filter is not None:
                meta = self.access.metadata.entity(entities[0])
                if meta is None:
                    raise ValueError(f"entity {entities[0]} is gone")
                matcher = compiled(meta, loads(row.filter), self.access.permissions)
            known = self._known[row.key] = (texts, _Subscription(
                row.key, row.after, frozenset(entities), frozenset(loads(row.kinds)), matcher))
        after = self._idle.get(row.key, 0)
        sub = known[1]
        if row.after > after:
            after = row.after
        return sub if sub.after == after else sub._replace(after=after)

    def _hand_out_to(self, wanting: dict[str, tuple[int, list[dict[str, object]]]],
                     pick: _Pick) -> None:
        """The delivery rows of the subscriptions ``wanting`` (key -> the
        ``after`` they were picked after, those rows), in one transaction that
        locks their rows (their ``after`` as it is then decides what is new;
        PostgreSQL: one locked by another instance is left to it)."""
        with write_transaction(self.database):
            keys = list(wanting)
            sql = f"{_SELECT} WHERE {_ids_in(keys, self.database)}"
            if not is_sqlite(self.database):
                sql += " FOR UPDATE SKIP LOCKED"
            rows: list[dict[str, object]] = []
            moved: list[str] = []
            for row in _rows(self.database, sql, keys):
                after, picked = wanting[row.key]
                try:
                    sub = self.subscription(row)
                    rows += picked if sub.after == after else pick.rows(sub, sub.after)
                except Exception:   # noqa: BLE001  (one subscription's bad row stops no other)
                    log.exception("webhook delivery: events of subscription %s not handed "
                                  "out", row.key)
                    continue
                moved.append(row.key)
            for start in range(0, len(rows), 500):
                WebhookDelivery.insert_many(rows[start:start + 500]).execute()
            _move_on(self.database, moved, pick.window[-1]["id"])
        for key in moved:
            self._idle.pop(key, None)


def _move_on(database: peewee.Database, keys: list[str], last: int) -> None:
    """The subscriptions ``keys`` have been handed the events up to ``last``."""
    p = database.param
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        execute(database, f'UPDATE {_TABLE} SET "after" = {p} WHERE "after" < {p} AND '
                          f"{_ids_in(chunk, database)}", [last, last, *chunk])
