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

The subscriptions are kept in memory between passes (``_Known``), read
again when one was added or removed (``_SIGNATURE``, each pass) and every
``MOVE_ON_EVERY`` seconds (one the settings changed in place); a pass's
work grows with its events, not with the number of subscriptions: per
entity, those without a filter, those whose filter can be found by the
row's value (``Matcher.found_by``, byvalue.py) and the others, judged one
by one. What a
pass picks from memory is checked in the transaction against the locked
row (its ``after`` and filter as they are then).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..data.access import Access
from ..db import execute, in_list, is_sqlite, list_param, write_transaction
from ..jsonio import dumps, loads
from . import outbox
from .byvalue import ByValue
from .matching import Matcher, Verdicts, compiled, full_permissions, read_paths
from .webhooks import WebhookDelivery, WebhookSubscription

if TYPE_CHECKING:
    import peewee

    from ..model.metadata import Metadata

log = logging.getLogger("restsvc")
BATCH = 500             # events handed out per pass (and window)
INSERT_CHUNK = 2000      # delivery rows per INSERT
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
_DELIVERIES = WebhookDelivery._meta.table_name
# A delivery row's values (_insert): subscription, event, match.
_Delivery = tuple[str, int, "bool | None"]
# Whether a subscription was added or removed since the last pass read them all.
_SIGNATURE = f'SELECT count(*), max("createdDate") FROM {_TABLE}'


def _rows(database: peewee.Database, sql: str = _SELECT, params: Sequence[object] = ()
          ) -> list[_Row]:
    return [_Row(*row) for row in execute(database, sql, params).fetchall()]


class _Subscription:
    """A subscription as this worker knows it: parsed, its filter compiled,
    and how far it has been handed out (``after``: ahead of its row while a
    move-on is not yet written)."""
    __slots__ = ("key", "after", "entities", "kinds", "matcher", "texts")

    def __init__(self, row: _Row, matcher: Matcher | None) -> None:
        self.key, self.after, self.matcher = row.key, row.after, matcher
        self.entities: frozenset[str] = frozenset(loads(row.entities))
        self.kinds: frozenset[str] = frozenset(loads(row.kinds))
        self.texts = row[2:]        # all but the key and ``after``: a change recompiles


class _Known:
    """The subscriptions, grouped for picking which want an event: per
    entity, those without a filter, those whose filter has an index
    (matching.Matcher.found_by: found by the row's value, not judged
    one by one, byvalue.py) and the others; and the paths the filters read. Made again when the
    subscriptions change."""

    def __init__(self, metadata: Metadata, subs: list[_Subscription]) -> None:
        self.subs = subs
        self.entities = sorted({name for sub in subs for name in sub.entities})
        self.paths = read_paths(metadata, [sub.matcher for sub in subs if sub.matcher])
        self.plain: dict[str, list[_Subscription]] = {}
        self.judged: dict[str, list[_Subscription]] = {}
        self.looked_up: ByValue[_Subscription] = ByValue()
        for sub in subs:
            matcher = sub.matcher
            if matcher is None:
                for name in sub.entities:
                    self.plain.setdefault(name, []).append(sub)
            elif not self.looked_up.add(matcher, sub):
                self.judged.setdefault(matcher.entity, []).append(sub)

    def wanting(self, start: int, window: list[outbox.Event], verdicts: Verdicts | None
                ) -> dict[str, list[_Delivery]]:
        """Subscription -> the delivery rows of the window's events it wants
        (after its ``after``, its entities and kinds, its filter's), of those
        whose ``after`` is in the window (``start``: what it was read after)."""
        rows: dict[str, list[_Delivery]] = {}
        for event in window:
            number, name, kind = event["id"], event["entity"], event["kind"]
            for sub in self.plain.get(name, ()):
                if start <= sub.after < number and kind in sub.kinds:
                    rows.setdefault(sub.key, []).append((sub.key, number, None))
            if verdicts is None:
                continue
            judge = verdicts.judge(event)
            for sub in self._candidates(event, verdicts):
                matcher = sub.matcher
                if matcher is not None and start <= sub.after < number and kind in sub.kinds:
                    match = judge(matcher)
                    if match is not None:
                        rows.setdefault(sub.key, []).append((sub.key, number, match))
        return rows

    def _candidates(self, event: outbox.Event, verdicts: Verdicts) -> list[_Subscription]:
        """The filtered subscriptions that may let ``event`` through: those
        without an index, and those whose index holds the row's value after or
        before the change."""
        found = dict.fromkeys(self.judged.get(event["entity"], ()))
        found.update(dict.fromkeys(self.looked_up.found(event, verdicts)))
        return list(found)


class HandOut:
    """Hands out new events, pass after pass, for one delivery worker."""

    def __init__(self, database: peewee.Database, metadata: Metadata) -> None:
        self.database = database
        self.access = Access(metadata, full_permissions(metadata), {}, database, {})
        self._subs: dict[str, _Subscription] = {}
        self._known = _Known(metadata, [])
        self._signature: tuple[object, ...] | None = None
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
        everything = now - self._written >= MOVE_ON_EVERY
        if everything:
            self.write_idle(now)
        self._refresh(everything)
        remaining = self._known.subs
        while remaining:
            start = min(sub.after for sub in remaining)
            window = outbox.read(self.database, start, self._known.entities, BATCH)
            if not window:
                return
            last = window[-1]["id"]
            beyond = [sub for sub in remaining if sub.after >= last]
            self._hand_out_window([sub for sub in remaining if sub.after < last], start, window,
                                  now)
            remaining = beyond

    def _refresh(self, everything: bool) -> None:
        """Read the subscriptions again when one was added or removed (or,
        ``everything``, in any case: one the settings changed in place)."""
        signature = tuple(execute(self.database, _SIGNATURE).fetchone() or ())
        if signature == self._signature and not everything:
            return
        self._signature = signature
        subs: dict[str, _Subscription] = {}
        for row in _rows(self.database):
            try:
                subs[row.key] = self.subscription(row)
            except Exception:       # noqa: BLE001  (one subscription's bad row stops no other)
                log.exception("webhook delivery: subscription %s cannot be read", row.key)
        self._subs = subs
        self._idle = {key: last for key, last in self._idle.items() if key in subs}
        self._known = _Known(self.access.metadata, list(subs.values()))

    def _hand_out_window(self, subscriptions: list[_Subscription], start: int,
                         window: list[outbox.Event], now: float) -> None:
        """``window``'s events (those after ``start``) to ``subscriptions``
        (each ``after`` in it)."""
        known = self._known
        verdicts = Verdicts(self.access, window, known.paths) if known.paths else None
        wanting = known.wanting(start, window, verdicts)
        last = window[-1]["id"]
        if wanting:
            self._hand_out_to({key: (self._subs[key], self._subs[key].after, rows)
                               for key, rows in wanting.items()}, window, now)
        for sub in subscriptions:
            if sub.key not in wanting:
                sub.after = self._idle[sub.key] = last

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
        compiled, once (again only when they change); ``after`` the row's or,
        when this worker has moved it on further, its own."""
        sub = self._subs.get(row.key)
        if sub is None or sub.texts != row[2:]:
            matcher = None
            if row.filter is not None:
                entities = loads(row.entities)
                meta = self.access.metadata.entity(entities[0])
                if meta is None:
                    raise ValueError(f"entity {entities[0]} is gone")
                matcher = compiled(meta, loads(row.filter), self.access.permissions)
            known, sub = sub, _Subscription(row, matcher)
            if known is not None:
                sub.after = max(sub.after, known.after)
            self._subs[row.key] = sub
        elif row.after > sub.after:
            sub.after = row.after
        return sub

    def _hand_out_to(self, wanting: dict[str, tuple[_Subscription, int, list[_Delivery]]],
                     window: list[outbox.Event], now: float) -> None:
        """The delivery rows of the subscriptions ``wanting`` (key -> the
        subscription, the ``after`` it was picked after, those rows), in one transaction that
        locks their rows (their ``after`` and filter as they are then decide
        what is new; PostgreSQL: one locked by another instance is left to it)."""
        with write_transaction(self.database):
            keys = list(wanting)
            sql = f"{_SELECT} WHERE id {in_list(self.database)}"
            if not is_sqlite(self.database):
                sql += " FOR UPDATE SKIP LOCKED"
            rows: list[_Delivery] = []
            moved: list[_Subscription] = []
            for row in _rows(self.database, sql, [list_param(self.database, keys)]):
                picked_from, after, picked = wanting[row.key]
                try:
                    sub = self.subscription(row)
                    if sub is not picked_from or sub.after != after:     # changed meanwhile
                        judging = None if sub.matcher is None else Verdicts(
                            self.access, window, [sub.matcher])
                        picked = _Known(self.access.metadata, [sub]).wanting(
                            sub.after, window, judging).get(sub.key, [])
                    rows += picked
                except Exception:   # noqa: BLE001  (one subscription's bad row stops no other)
                    log.exception("webhook delivery: events of subscription %s not handed "
                                  "out", row.key)
                    continue
                moved.append(sub)
            _insert(self.database, rows, now)
            _move_on(self.database, [sub.key for sub in moved], window[-1]["id"])
        for sub in moved:
            sub.after = window[-1]["id"]
            self._idle.pop(sub.key, None)


def _insert(database: peewee.Database, rows: list[_Delivery], now: float) -> None:
    """New pending delivery rows, first and next attempt ``now``,
    ``INSERT_CHUNK`` to a statement: the rows' subscriptions, events and
    matches go in as one JSON text (a parameter per value cost psycopg2 about
    1 µs each to quote: 1.2 ms of a pass's 161 rows)."""
    p = database.param
    if is_sqlite(database):
        source = ("json_extract(value, '$[0]'), json_extract(value, '$[1]'), 'pending', 0, "
                  f"{p}, {p}, json_extract(value, '$[2]') FROM json_each({p}) ORDER BY key")
    else:
        source = (f"r->>0, (r->>1)::bigint, 'pending', 0, {p}, {p}, (r->>2)::boolean "
                  f"FROM json_array_elements({p}::json) WITH ORDINALITY AS e(r, n) ORDER BY n")
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start:start + INSERT_CHUNK]
        execute(database, f'INSERT INTO {_DELIVERIES} (subscription, "eventId", state, attempts, '
                          f'"firstAttempt", "nextAttempt", match) SELECT {source}',
                [now, now, dumps(chunk)])


def _move_on(database: peewee.Database, keys: list[str], last: int) -> None:
    """The subscriptions ``keys`` have been handed the events up to ``last``."""
    p = database.param
    execute(database, f'UPDATE {_TABLE} SET "after" = {p} WHERE "after" < {p} AND '
                      f"id {in_list(database)}", [last, last, list_param(database, keys)])
