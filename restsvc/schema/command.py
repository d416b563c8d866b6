"""``restsvc migrate``: what it prints and the exit code it returns.

0: done (or nothing to do, or only a plan asked for); 1: it cannot run (a
blocked step, a failed step, a lock held too long, the database unreachable);
2: destructive steps are pending and ``--allow-destructive`` was not given.
"""
import argparse
from collections.abc import Callable, Sequence
from typing import Protocol

import peewee

from . import MigrationError, migrate, status
from .declared import Lowered, Searched
from .plan import Step

Out = Callable[[str], None]


class _Metadata(Protocol):
    def indexed_text_fields(self) -> Lowered: ...
    def full_text(self) -> Searched: ...


class _App(Protocol):
    """What the command reads of a RestApp."""

    @property
    def database(self) -> peewee.Database: ...
    @property
    def models(self) -> Sequence[type[peewee.Model]]: ...
    @property
    def metadata(self) -> _Metadata: ...


def run(app: _App, args: argparse.Namespace, out: Out) -> int:
    """``app``: a RestApp built without the start-up check; ``out``: print."""
    lowered, search = app.metadata.indexed_text_fields(), app.metadata.full_text()
    try:
        try:
            if args.status:
                return _status(app, lowered, search, out)
            outcome = migrate(app.database, app.models, lowered, apply=not args.plan,
                              allow_destructive=args.allow_destructive,
                              backup=not args.no_backup, lock_timeout=args.lock_timeout,
                              search=search)
        finally:   # a one-shot command: its pooled PostgreSQL connections go too
            close: Callable[[], object] = getattr(app.database, "close_all", app.database.close)
            close()
    except MigrationError as exc:
        raise CommandFailed(f"migrate: {exc}") from None
    except (peewee.OperationalError, peewee.InterfaceError) as exc:
        # Connecting failed (a migration's own failures are MigrationErrors).
        raise CommandFailed(f"migrate: cannot reach the database: "
                            f"{str(exc).strip().splitlines()[0]}") from None
    if not outcome.steps:
        out("nothing to do: the database matches the model")
        return 0
    if args.plan:
        out("\n\n".join(step.text() for step in outcome.steps))
        return 0
    if outcome.blocked:
        _list(out, "cannot migrate; nothing was changed. Blocked:", outcome.blocked,
              lambda step: step.blocked)
        return 1
    if not outcome.applied:
        _list(out, "destructive steps are pending; nothing was changed:", outcome.destructive,
              lambda step: step.description)
        out("review them with `restsvc migrate --plan`, then run "
            "`restsvc migrate --allow-destructive`")
        return 2
    if outcome.backup:
        out(f"backup written first: {outcome.backup}")
    _list(out, f"applied {len(outcome.steps)} steps:", outcome.steps,
          lambda step: step.description)
    return 0


class CommandFailed(Exception):
    """The message says why; the exit code is 1."""


def _status(app: _App, lowered: Lowered, search: Searched, out: Out) -> int:
    records, pending = status(app.database, app.models, lowered, search)
    for record in records:
        out(f"{record.applied_at:%Y-%m-%d %H:%M:%S} UTC  {record.name}  "
            f"(restsvc {record.restsvc_version}, sha256 {record.checksum[:12]})")
    if not records:
        out("no migrations recorded")
    destructive = sum(1 for step in pending if step.destructive)
    out(f"{len(pending)} steps pending ({destructive} destructive)" if pending else "up to date")
    return 0


def _list(out: Out, title: str, steps: Sequence[Step], text: Callable[[Step], str | None]) -> None:
    out(title)
    for step in steps:
        out(f"  - {text(step)}")
