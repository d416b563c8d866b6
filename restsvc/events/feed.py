"""The change feed: committed changes as Server-Sent Events.

``GET /rest/events?entity=Order&entity=Customer`` answers ``text/event-stream``:
each event is a message with an ``id:`` line (the outbox id) and the event's
JSON as ``data:``. A stream starts after the newest event at the time it
opens, or after ``Last-Event-ID`` (the header a reconnecting ``EventSource``
sends, or the ``lastEventId`` parameter): everything after it that is still
kept, in id order, once (outbox.py says why ids are read in commit order).
An id older than what is kept gets ``event: reset`` (the client resynchronises;
the message's id is where the stream goes on from).

What a caller sees is decided per event, with the permissions of its token:
entities it may read (asking for another is 403), rows its row-level roles let
it read now (a row read as it is when the event is read: the change that
moves a row out of a reader's scope may be shown if read before the next
change, later ones are not; a row deleted for good can no longer be checked,
so its DELETE reaches only readers without row-level roles on its entity),
and of the event what the Entities API would show it (visibility.py: of
``changed`` the attributes it may view, ``username`` only when it may see
who wrote the row).

A stream holds one thread of its worker: ``svc.events.max-streams-per-worker``
caps them (503 with Retry-After beyond), and one caller (a user, or the client
of a client-credentials token) holds at most
``svc.events.max-stream-share-per-caller`` of them (half by default, at least
one; 429 with Retry-After beyond), so one caller cannot take every place of
an instance. It ends when its token expires or
is revoked (checked at every poll, the gate's half-second recheck included),
and when the instance drains or its worker stops, so the client reconnects to
another instance with its last id. A comment line every
``svc.events.keepalive`` seconds keeps proxies from cutting an idle stream.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from itsdangerous import BadSignature, URLSafeTimedSerializer

from .. import db
from ..errors import ApiError, BadRequest, Forbidden, NotFound
from ..health import is_shutting_down
from ..jsonio import JsonValue
from . import outbox
from .hub import Hub, Subscriber, reset_message
from .matching import Matcher, compiled

if TYPE_CHECKING:
    import peewee

    from ..data.access import Access
    from ..model.metadata import MetaClass, Metadata
    from ..security.roles import Permissions
    from ..settings import Settings

RETRY_MILLISECONDS = 2000       # what an EventSource waits before reconnecting
RETRY = f"retry: {RETRY_MILLISECONDS}\n\n".encode()
_closing = threading.Event()    # wakes waiting streams early (tests, never a signal handler)
_close_requested = False        # this worker stops (close_streams)


def close_streams() -> None:
    """End every stream of this process at its next poll. Called from a
    signal handler (gunicorn_config.post_worker_init), so it only sets a
    flag: a lock taken here (an Event's) could be held already by the same
    handler interrupted by a second SIGTERM, and wait for itself forever."""
    global _close_requested
    _close_requested = True


class StreamSlots:
    """How many streams this process serves at once, at most, and at most how
    many of them one caller holds."""

    def __init__(self, limit: int, share: float = 1.0) -> None:
        self.limit = limit
        self.per_caller = max(1, int(limit * share))
        self.open = 0
        self._callers: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, caller: str | None = None) -> None:
        with self._lock:
            if self.open >= self.limit:
                raise ApiError("Too many streams", "This instance serves as many event streams "
                                                   "as it can; retry shortly", status=503,
                               headers={"Retry-After": "5"})
            if caller is not None and self._callers.get(caller, 0) >= self.per_caller:
                raise ApiError("Too many streams", f"This caller holds {self.per_caller} event "
                                                   f"streams of this instance, as many as one "
                                                   f"caller may; close one or retry shortly",
                               status=429, headers={"Retry-After": "5"})
            self.open += 1
            if caller is not None:
                self._callers[caller] = self._callers.get(caller, 0) + 1

    def give(self, caller: str | None = None) -> None:
        with self._lock:
            self.open -= 1
            if caller is not None:
                left = self._callers.get(caller, 0) - 1
                if left > 0:
                    self._callers[caller] = left
                else:
                    self._callers.pop(caller, None)


class Tickets:
    """Short-lived stream tickets for browsers (``EventSource`` sends no
    headers): signed, naming the token by its hash (never the token itself)."""

    def __init__(self, secret_key: str, lifetime: int) -> None:
        self.lifetime = lifetime
        self._signer = URLSafeTimedSerializer(secret_key, salt="restsvc.events.ticket")

    def issue(self, token_hash: str) -> str:
        return self._signer.dumps(token_hash)

    def token_hash(self, ticket: str) -> str | None:
        try:
            token_hash = self._signer.loads(ticket, max_age=self.lifetime)
        except BadSignature:        # SignatureExpired included
            return None
        return token_hash if isinstance(token_hash, str) else None


def subscribed(metadata: Metadata, permissions: Permissions,
               names: Iterable[str]) -> list[MetaClass]:
    """The entities a stream follows: those named (404 unknown, 400 without
    events, 403 not readable), or all with events the caller may read (403
    when there is none: a stream never reads without naming its entities)."""
    if not names:
        metas = [meta for meta in metadata.entities.values()
                 if meta.events and permissions.can(meta.name, "read")]
        if not metas:
            raise Forbidden("Reading forbidden", "No entity that publishes events may be read")
        return metas
    metas = []
    for name in dict.fromkeys(names):
        meta = metadata.entity(name)
        if meta is None:
            raise NotFound("Entity not found", f"Entity {name} not found")
        if not meta.events:
            raise BadRequest("No events", f"Entity {name} publishes no change events")
        if not permissions.can(name, "read"):
            raise Forbidden("Reading forbidden", f"Reading of the {name} is forbidden")
        metas.append(meta)
    return metas


def stream_filter(names: list[str], metas: list[MetaClass], spec: JsonValue | None,
                  access: Access) -> Matcher | None:
    """A stream's filter (None without one), compiled for the caller: it
    needs exactly one entity named (``names``; ``metas``: ``subscribed``'s),
    the search's 400s otherwise."""
    if spec is None:
        return None
    if len(set(names)) != 1 or len(metas) != 1:
        raise BadRequest("Invalid parameter value",
                         "Parameter filter needs exactly one entity parameter")
    return compiled(metas[0], spec, access.permissions, access.session)


def last_event_id(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit() or len(value) > 18:
        raise BadRequest("Invalid parameter value", "Last-Event-ID must be an event id")
    return int(value)


class StreamApp(Protocol):
    """What a stream reads of the app."""

    @property
    def database(self) -> peewee.Database: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def event_hub(self) -> Hub: ...


class Stream:
    """One caller's stream in a worker thread; iterate it for the response
    body's chunks (the process's hub reads and fans out, hub.py)."""

    def __init__(self, app: StreamApp, access: Access, metas: Iterable[MetaClass],
                 recheck: Callable[[], bool], after: int | None = None,
                 matcher: Matcher | None = None) -> None:
        self.app = app
        self.settings = app.settings
        self._woken = threading.Event()
        # Where it begins: when it is opened (the reset message when the asked id is gone).
        start, self.reset = starting(app.database, after)
        self.subscriber = Subscriber(access, metas, matcher, start, recheck,
                                     app.settings.events_stream_buffer, self._woken.set)
        db.release(app.database)

    def __iter__(self) -> Iterator[bytes]:
        settings, hub, sub = self.settings, self.app.event_hub, self.subscriber
        hub.subscribe(sub)
        try:
            yield RETRY
            if self.reset is not None:
                yield self.reset
            quiet_since = time.monotonic()
            while not closing():
                chunk, last = sub.take()
                if chunk:
                    quiet_since = time.monotonic()
                    yield chunk
                if last is not None:
                    if last:
                        yield last
                    return
                if time.monotonic() - quiet_since >= settings.events_keepalive:
                    quiet_since = time.monotonic()
                    yield b": keepalive\n\n"
                self._woken.wait(settings.events_poll_interval)
                self._woken.clear()
        finally:
            hub.unsubscribe(sub)


def closing() -> bool:
    """Whether every stream of this process ends now (its worker stops, or the drain began)."""
    return _close_requested or _closing.is_set() or is_shutting_down()


def starting(database: peewee.Database, after: int | None) -> tuple[int, bytes | None]:
    """(the id a stream asked to start after ``after`` starts after, the reset
    message when the events after ``after`` are no longer kept)."""
    if after is None:
        return outbox.position(database), None
    outbox.assign(database)
    oldest, newest = outbox.bounds(database)
    newest = newest or 0
    if after > newest or (oldest is not None and after < oldest - 1):
        return newest, reset_message(newest, "events after this id are no longer kept")
    return after, None
