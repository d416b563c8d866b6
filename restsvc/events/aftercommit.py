"""After-commit hooks: a model's classmethod ``after_commit(cls, event, data)``
runs once for each committed create, update and delete of its entity
(declared with ``events=True``), outside the write's transaction;
restsvc/docs/hooks.md is the manual.

They are driven by the outbox (outbox.py), so a crash between a commit and
its hook loses nothing. ``restsvc deliver`` runs them on a thread of its own
(``AfterCommit.run``, beside the webhook deliveries). Each hook has a
position, a row of ``restsvc_after_commit``: the id of the last event it
has run for. A pass runs each hook on its events after that position, one
event per unit of work (``DataAccess.unit_of_work``): the hook runs, then
its position moves on, in the one write transaction the hook's first
``data`` write began (a hook that writes nothing: the position's UPDATE
alone). No lock is held before that write, so a hook that calls another
system first does not hold SQLite's write lock meanwhile.

- commit: the hook's writes and the new position are kept together, so
  without a crash the hook runs exactly once per event;
- the hook raises, or the process dies before the commit: both are undone
  and the event comes again (at least once for what the hook does outside
  the database; ``event["id"]`` makes such a handler idempotent). A failed
  event is retried after ``svc.webhooks.retry-initial-delay`` x
  2^(attempts-1) (at most an hour, half of it random), and the hook's later
  events wait for it: each hook sees its events in order. The write that
  made the event is never undone.
- two workers: the position's UPDATE applies only at the position read
  before (PostgreSQL: after the row's lock is had), so one of them moves it
  on; the other's run is rolled back with its writes (its calls to other
  systems, at least once, stand).

A hook seen for the first time starts after the newest event then kept
(``outbox.position``): events of writes before its first pass are not run.
A hook's ``data`` is a ``DataAccess`` with full access (the roles of
``system-full-access``) whose writes are recorded under
``<Entity>.after_commit``.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import peewee

from ..data.bound import DataAccess
from ..db import database_proxy
from . import outbox
from .delivery import run_passes

if TYPE_CHECKING:
    from ..data.access import Access
    from ..data.datamanager import DataManager
    from ..model.metadata import Metadata
    from ..settings import Settings

log = logging.getLogger("restsvc")
MAX_DELAY = 3600.0
EVENTS_PER_PASS = 100       # per hook: then the other hooks have their turn
# after_commit(event, data) of one entity's model
Hook = Callable[[outbox.Event, DataAccess], Any]


class _Taken(Exception):
    """Another worker has run the event meanwhile: this run's writes go."""


class HookPosition(peewee.Model):
    entity = peewee.CharField(primary_key=True, max_length=255)    # whose after_commit
    after = peewee.BigIntegerField(default=0)       # events up to this id have been run
    attempts = peewee.IntegerField(default=0)       # failures of the event after it
    nextAttempt = peewee.DoubleField(default=0)     # epoch seconds
    lastError = peewee.CharField(max_length=255, null=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_after_commit"


def hooks_of(metadata: Metadata) -> dict[str, Hook]:
    """{entity name: its model's after_commit} of the entities that have one."""
    found: dict[str, Hook] = {}
    for meta in metadata.entities.values():
        hook = getattr(meta.model, "after_commit", None)
        if hook is not None:
            found[meta.name] = hook
    return found


class AfterCommit:
    """Runs the after-commit hooks (see above)."""

    def __init__(self, settings: Settings, manager: DataManager, access: Access) -> None:
        self.settings = settings
        self.database = manager.database
        self.manager = manager
        self.access = access            # the service's: full access
        self.hooks = hooks_of(manager.metadata)
        self._registered = False

    def run(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set; a pass's error is logged and
        the next pass tries again."""
        run_passes(self.step, stop, self.database, self.settings.events_poll_interval,
                   "after-commit hooks")

    def step(self, now: float | None = None) -> bool:
        """One pass over every hook; whether any ran an event."""
        now = time.time() if now is None else now
        if not self._registered:
            self._register()
        outbox.assign(self.database)
        ran = False
        for name, hook in self.hooks.items():
            ran = self._run_due(name, hook, now) or ran
        return ran

    def _register(self) -> None:
        """Each hook's position, starting at the newest event for a new one."""
        if self.hooks:
            start = outbox.position(self.database)
            HookPosition.insert_many([{"entity": name, "after": start} for name in self.hooks]
                                     ).on_conflict_ignore().execute()
        self._registered = True

    def _run_due(self, name: str, hook: Hook, now: float) -> bool:
        """Run ``hook`` on its next events, if due, in order until one fails;
        whether any ran."""
        row = HookPosition.get_or_none(HookPosition.entity == name)
        if row is None or row.nextAttempt > now:
            return False
        ran = False
        for event in outbox.read(self.database, row.after, [name], EVENTS_PER_PASS):
            if not self._run_one(hook, row, event, now):
                break
            row.after, row.attempts, ran = event["id"], 0, True
        return ran

    def _run_one(self, hook: Hook, row: HookPosition, event: outbox.Event, now: float) -> bool:
        """Run ``hook`` on ``event``, the one after ``row``'s position; whether it committed."""
        name = row.entity
        data = self.data(name)
        try:
            with data.unit_of_work():   # its transaction begins at the hook's first write
                hook(event, data)
                moved = HookPosition.update(after=event["id"], attempts=0, nextAttempt=0,
                                            lastError=None).where(
                    (HookPosition.entity == name) & (HookPosition.after == row.after)).execute()
                if moved != 1:
                    raise _Taken()
        except _Taken:
            return False
        except Exception as exc:        # noqa: BLE001  (the hook's failure: retried)
            log.warning("after-commit hook of %s failed on event %s (attempt %s); retried",
                        name, event["id"], row.attempts + 1, exc_info=True)
            self._failed(row, now, f"{type(exc).__name__}: {exc}")
            return False
        return True

    def data(self, name: str) -> DataAccess:
        """What ``name``'s hook reads and writes with, in its own name."""
        return DataAccess(self.manager, dataclasses.replace(
            self.access, writer=f"{name}.after_commit"))

    def _failed(self, row: HookPosition, now: float, error: str) -> None:
        """The event after ``row``'s position failed: due again after the backoff."""
        attempts = row.attempts + 1
        delay = min(self.settings.webhooks_retry_initial_delay * 2 ** min(attempts - 1, 30),
                    MAX_DELAY)
        delay = delay / 2 + random.uniform(0, delay / 2)
        HookPosition.update(attempts=attempts, nextAttempt=now + delay,
                            lastError=error[:255]).where(
            (HookPosition.entity == row.entity) & (HookPosition.after == row.after)).execute()
