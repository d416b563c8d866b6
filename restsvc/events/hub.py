"""One read of new events per process for every open stream, fanned out in memory.

A ``Hub`` reads the outbox once per ``svc.events.stream-poll-interval`` for
all its subscribers (``Subscriber``: one open stream each), whatever their
number (on PostgreSQL also when a commit notifies it, listen.py):
subscribers that are at the same position (all of them, once caught up)
share one read; one that resumes from an older ``Last-Event-ID`` reads on
its own until it has caught up. Each event of a read goes to the
subscribers that may see it (``fan_out``):

- the entities a subscriber follows;
- row-level roles and tenant (the row as read now, ``visible_ids``), asked
  once per entity and batch for every subscriber that shares the same
  checks (same tenant, session and row rules: ``checks_of``);
- the subscriber's filter (matching.py ``Verdicts``: rows loaded once per
  entity and batch for every filter of subscribers sharing the checks);
- what the subscriber may see of the event (visibility.py), worked out once
  per stream (its attribute levels, whether it sees each kind's writer) and
  each distinct message serialized once per batch.

A subscriber's messages wait in a buffer of ``svc.events.stream-buffer``
bytes (and one batch more) for its host to write them (a worker thread, feed.Stream, or the
stream process's event loop, streamproc.py). A subscriber that lets it fill
is cut: it gets ``event: reset`` (the id: where a reconnecting client goes
on from; it resynchronises what it missed) and its stream ends, without
holding memory or delaying the others. The hub also rechecks each
subscriber's token every ``RECHECK`` seconds; one that no longer holds ends
the stream with ``event: end``.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING

from .. import db
from ..data.read.loader import visible_ids
from ..data.ids import id_or_none
from ..jsonio import dumps
from . import outbox
from .listen import Listener
from .byvalue import ByValue
from .matching import Matcher, Verdicts, read_paths
from .shapes import shape_of
from .outbox import Event

if TYPE_CHECKING:
    import peewee

    from ..data.access import Access
    from ..model.metadata import MetaClass

log = logging.getLogger("restsvc.events")
BATCH = 200
RECHECK = 0.5       # seconds between two checks of a subscriber's token
SETTLE = 0.05       # seconds at least between two passes woken early (PostgreSQL's
                    # notifications, one per commit, are taken together: a read and its
                    # checks per pass, not per commit; at most this much later)
END = b"event: end\ndata: {\"reason\": \"token expired or revoked\"}\n\n"


def reset_message(after: int, reason: str) -> bytes:
    return f"id: {after}\nevent: reset\ndata: {dumps({'reason': reason})}\n\n".encode()


class Subscriber:
    """One open stream, as the hub sees it: its shape (what it may see, worked
    out once) and the messages waiting for its host to write them."""
    __slots__ = ("access", "matcher", "after", "recheck", "credential", "capacity", "wake",
                 "shape", "metas", "checks", "restricted", "levels", "writer", "checked",
                 "_pending", "_size", "_last", "_lock")

    def __init__(self, access: Access, metas: Iterable[MetaClass], matcher: Matcher | None,
                 after: int, recheck: Callable[[], bool], capacity: int,
                 wake: Callable[[], None], credential: Hashable = None) -> None:
        self.access = access
        self.matcher = matcher
        self.after = after
        self.recheck = recheck
        # Streams of one credential share its recheck (None: a check of its own).
        self.credential = credential if credential is not None else id(self)
        self.capacity = capacity
        self.wake = wake            # called by the hub when there is something to write
        # Subscribers of the same shape are handed the same messages: worked out once.
        self.shape = shape = shape_of(access, metas, matcher)
        self.metas, self.checks, self.restricted = shape.metas, shape.checks, shape.restricted
        self.levels, self.writer = shape.levels, shape.writer
        self.checked = time.monotonic()
        self._pending: list[bytes] = []
        self._size = 0
        self._last: bytes | None = None     # the stream's last message, once it ends
        self._lock = threading.Lock()

    def take(self) -> tuple[bytes, bytes | None]:
        """(the messages waiting, the last message when the stream ends: b"" for none)."""
        with self._lock:
            chunk = b"".join(self._pending)
            self._pending = []
            self._size = 0
            return chunk, self._last

    def push(self, chunk: bytes) -> None:
        with self._lock:
            if self._last is not None:
                return
            if self._pending and self._size + len(chunk) > self.capacity:
                log.info("a change feed stream fell behind by more than %s bytes: cut with "
                         "event: reset", self.capacity)
                self._pending.clear()
                self._size = 0
                self._last = reset_message(self.after, "the stream fell behind; "
                                                       "resynchronise and reconnect")
            else:
                self._pending.append(chunk)
                self._size += len(chunk)
        self.wake()

    def end(self, last: bytes = b"") -> None:
        with self._lock:
            if self._last is None:
                self._last = last
        self.wake()

    @property
    def ended(self) -> bool:
        return self._last is not None

    def message(self, event: Event, match: bool | None, made: dict[Hashable, bytes]) -> bytes:
        """``event`` as this subscriber may see it, serialized (once per batch
        for all subscribers that see it alike: ``made``)."""
        key = (event["id"], self.shape.view, match)
        found = made.get(key)
        if found is None:
            name, levels = event["entity"], self.levels[event["entity"]]
            changed = tuple(item for item in event["changed"] if levels.get(item, 0) >= 1)
            writer = self.writer.get((name, event["kind"]), False)
            shown = dict(event)
            shown["changed"] = list(changed)
            if not writer:
                shown.pop("username", None)
            if match is not None:
                shown["match"] = match
            found = made[key] = f"id: {event['id']}\ndata: {dumps(shown)}\n\n".encode()
        return found


class _Plan:
    """How ``fan_out`` goes over a set of subscribers: the groups of one shape
    tried on every event, those found by their filter's ``found_by`` (checks,
    entity, path -> value -> groups), and per checks the paths the filters
    read. Made once for as long as the same subscribers come again."""

    def __init__(self, subscribers: list[Subscriber]) -> None:
        self.subscribers = subscribers
        shapes: dict[Hashable, list[Subscriber]] = {}
        for sub in subscribers:
            shapes.setdefault(sub.shape, []).append(sub)
        self.tried: list[list[Subscriber]] = []
        # checks -> (a subscriber of them, their groups found by value)
        self.looked_up: dict[Hashable, tuple[Subscriber, ByValue[list[Subscriber]]]] = {}
        matchers: dict[Hashable, tuple[Subscriber, list[Matcher]]] = {}
        for group in shapes.values():
            first = group[0]
            matcher = first.matcher
            if matcher is not None:
                matchers.setdefault(first.checks, (first, []))[1].append(matcher)
            if matcher is None or not self.looked_up.setdefault(
                    first.checks, (first, ByValue()))[1].add(matcher, group):
                self.tried.append(group)
        self.paths = {checks: read_paths(first.access.metadata, found)
                      for checks, (first, found) in matchers.items()}


_plans: list[_Plan] = []        # the last few made


def _plan(subscribers: list[Subscriber]) -> _Plan:
    for plan in _plans:
        if plan.subscribers == subscribers:     # the same ones: a Subscriber equals only itself
            return plan
    plan = _Plan(subscribers)
    _plans.insert(0, plan)
    del _plans[8:]
    return plan


def fan_out(events: list[Event], subscribers: Iterable[Subscriber],
            made: dict[Hashable, bytes] | None = None) -> None:
    """Hand each subscriber the events of ``events`` it may see: worked out
    once per shape of subscriber (``Subscriber.shape``). A filter with a
    ``found_by`` (matching.Matcher) is found by its rows' values, not tried:
    a batch costs what its events do, not what the number of filters does."""
    plan = _plan(list(subscribers))
    made = {} if made is None else made
    visible: dict[tuple[Hashable, str], set[str]] = {}
    verdicts: dict[Hashable, Verdicts] = {}

    def judged(sub: Subscriber) -> Verdicts:
        found = verdicts.get(sub.checks)
        if found is None:
            found = verdicts[sub.checks] = Verdicts(sub.access, events, plan.paths[sub.checks])
        return found
    candidates: dict[int, list[Subscriber]] = {}
    for first, by_value in plan.looked_up.values():
        if by_value:
            judge = judged(first)
            for event in events:
                candidates.update((id(group), group) for group in by_value.found(event, judge))
    for group in [*plan.tried, *candidates.values()]:
        sub = group[0]
        matcher = sub.matcher
        judging = None if matcher is None else verdicts.get(sub.checks) or judged(sub)
        out = []
        for event in events:
            name = event["entity"]
            if name not in sub.metas:
                continue
            if name in sub.restricted:
                allowed = visible.get((sub.checks, name))
                if allowed is None:
                    allowed = visible[(sub.checks, name)] = _visible(sub, name, events)
                if event["entityId"] not in allowed:
                    continue
            match = None
            if matcher is not None and judging is not None:
                match = judging.judge(event)(matcher)
                if match is None:
                    continue
            out.append(sub.message(event, match, made))
        if out:
            chunk = out[0] if len(out) == 1 else b"".join(out)
            for member in group:
                member.push(chunk)


def _visible(sub: Subscriber, name: str, events: list[Event]) -> set[str]:
    """The ids of the batch's rows of ``name`` the subscriber's checks let it read now."""
    meta = sub.metas[name]
    keys = [key for key in (id_or_none(meta, event["entityId"]) for event in events
                            if event["entity"] == name) if key is not None]
    # A soft-deleted row is judged as it was marked.
    seeing = dataclasses.replace(sub.access, include_deleted=True)
    return {str(key) for key in visible_ids(seeing, meta, keys)}


class Hub:
    """The subscribers of one process and the reader that serves them all."""

    def __init__(self, database: peewee.Database, interval: float,
                 closing: Callable[[], bool] = lambda: False) -> None:
        self.database = database
        self.interval = interval
        self.closing = closing      # () -> whether every stream of the process ends now
        self.reads = 0              # outbox reads so far (the benchmark counts them)
        self.phase = threading.local()  # .name: what the reader's statements are for
        self._subscribers: set[Subscriber] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._scanned = 0.0         # when the tokens were last rechecked
        self.listener = Listener(database, self._wake.set)

    def __len__(self) -> int:
        return len(self._subscribers)

    def doing(self) -> str:
        """What the calling thread's statements are for: ``events`` (reading
        and judging them), ``tokens`` (rechecks), or ``other`` (not the reader)."""
        return str(getattr(self.phase, "name", "other"))

    def subscribe(self, sub: Subscriber) -> None:
        with self._lock:
            self._subscribers.add(sub)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="restsvc-event-hub",
                                                daemon=True)
                self._thread.start()
                self.listener.start()
        self._wake.set()            # a new subscriber gets what is there at once

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(sub)

    def end_all(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            sub.end()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._subscribers:
                    self._thread = None
                    self.listener.stop()
                    return
                subscribers = list(self._subscribers)
            more = False
            started = time.monotonic()
            try:
                more = self.serve(subscribers)
            except Exception:       # noqa: BLE001 -- a database outage: try again next time
                time.sleep(self.interval)
            finally:
                db.release(self.database)
            if not more:
                if self._wake.wait(self.interval):
                    time.sleep(max(0.0, started + min(SETTLE, self.interval)
                                   - time.monotonic()))
                self._wake.clear()

    def serve(self, subscribers: list[Subscriber]) -> bool:
        """One pass: tokens rechecked, new events read and handed out; whether
        a whole batch came (read again at once)."""
        if self.closing():
            for sub in subscribers:
                sub.end()
            return False
        now = time.monotonic()
        if now - self._scanned >= RECHECK / 2:     # not at every pass: a scan of every stream
            self._scanned = now
            self.phase.name = "tokens"
            holds: dict[Hashable, bool] = {}
            for sub in subscribers:
                if now - sub.checked >= RECHECK and sub._last is None:
                    sub.checked = now
                    held = holds.get(sub.credential)
                    if held is None:
                        held = holds[sub.credential] = sub.recheck()
                    if not held:
                        sub.end(END)
        self.phase.name = "events"
        by_position: dict[int, list[Subscriber]] = {}
        for sub in subscribers:
            if sub._last is None:
                by_position.setdefault(sub.after, []).append(sub)
        if not by_position:
            return False
        outbox.assign(self.database)
        full = False
        for after, group in sorted(by_position.items()):
            events = outbox.read(self.database, after, None, BATCH)
            self.reads += 1
            if not events:
                continue
            full = full or len(events) == BATCH
            newest = events[-1]["id"]
            for sub in group:
                sub.after = newest
            fan_out(events, group)
        return full
