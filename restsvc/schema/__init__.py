"""Schema evolution: the declared model is the truth, the database follows it.

    inspect.py   what a live database holds
    declared.py  what the model declares, and the SQL that creates it
    compare.py   the differences, and which of them break a running service
    plan.py      differences -> ordered steps with their SQL
    apply.py     running steps under a lock, in one transaction
    history.py   the restsvc_migration table

``check`` is the start-up check, ``prepare`` what ``svc.datasource.init-schema``
does, ``migrate`` the ``restsvc migrate`` command's core.
"""
import datetime
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import peewee

from ..db import is_sqlite
from . import fulltext, history, trigram
from .apply import MigrationError, apply_steps, backup_sqlite, migration_lock
from .compare import BREAKS, WARNING, Difference, compare
from .declared import Lowered, Searched, declared_schema
from .inspect import inspect_database
from .plan import Step, plan

log = logging.getLogger("restsvc")
DEFAULT_LOCK_TIMEOUT = 30
Models = Iterable[type[peewee.Model]]

__all__ = ["DEFAULT_LOCK_TIMEOUT", "MigrationError", "SchemaMismatch", "check", "migrate",
           "prepare", "status"]


class SchemaMismatch(Exception):
    """The database does not match the model in a way requests would trip over."""


@dataclass(frozen=True)
class Outcome:
    steps: tuple[Step, ...]     # the plan (applied, or pending)
    applied: bool = False
    backup: str | None = None        # the SQLite backup written first, if any

    @property
    def destructive(self) -> list[Step]:
        return [step for step in self.steps if step.destructive]

    @property
    def blocked(self) -> list[Step]:
        return [step for step in self.steps if step.blocked]


def survey(database: peewee.Database, models: Models, lowered: Lowered = (),
           search: Searched = ()) -> tuple[list[Difference], list[Step]]:
    """(differences, steps) of the database against the models and restsvc's own tables."""
    declared = declared_schema(database, tuple(models) + (history.MigrationRecord,), lowered,
                               search)
    actual = inspect_database(database)
    differences = compare(database, declared, actual)
    return differences, plan(database, declared, actual, differences)


def check(database: peewee.Database, models: Models, lowered: Lowered = (),
          search: Searched = ()) -> None:
    """The start-up check: raises SchemaMismatch naming each difference that
    breaks requests and the command that fixes it; logs the warnings."""
    differences, steps = survey(database, models, lowered, search)
    _judge(differences, steps)
    _check_substring(database, lowered)


def _check_substring(database: peewee.Database, lowered: Lowered) -> None:
    """Says at start-up when substring filters cannot have their index."""
    trigram.forget(database)
    fulltext.forget(database)
    if lowered:
        support = trigram.support(database)
        if not support.available:
            trigram.warn_unsupported(database, support.reason)


def _judge(differences: Sequence[Difference], steps: Sequence[Step]) -> None:
    for difference in differences:
        if difference.severity == WARNING:
            log.warning("schema: %s (restsvc migrate fixes it)", difference)
    breaking = [d for d in differences if d.severity == BREAKS]
    if not breaking:
        return
    command = "restsvc migrate" + (" --allow-destructive" if any(
        step.destructive for step in steps) else "")
    lines = "\n".join(f"  - {d}" for d in breaking)
    raise SchemaMismatch(f"the database does not match the model:\n{lines}\n"
                         f"run `{command}` to bring it up to date "
                         f"(`restsvc migrate --plan` shows the steps first)")


def prepare(database: peewee.Database, models: Models, lowered: Lowered = (),
            lock_timeout: float = DEFAULT_LOCK_TIMEOUT, search: Searched = ()) -> Outcome:
    """``init-schema``: under the lock, apply what plain ``migrate`` would
    (creating a new database in one step), never a destructive or blocked step;
    then the start-up check. The Outcome holds the steps applied (none: the
    database already matched)."""
    with migration_lock(database, lock_timeout):
        differences, steps = survey(database, models, lowered, search)
        ready = tuple(step for step in steps if not step.destructive and not step.blocked)
        if ready:
            apply_steps(database, ready, _name("init-schema"))
            differences, steps = survey(database, models, lowered, search)
    _judge(differences, steps)
    _check_substring(database, lowered)
    return Outcome(ready, applied=bool(ready))


def migrate(database: peewee.Database, models: Models, lowered: Lowered = (), apply: bool = True,
            allow_destructive: bool = False, backup: bool = True,
            lock_timeout: float = DEFAULT_LOCK_TIMEOUT, search: Searched = ()) -> Outcome:
    """The plan, applied when ``apply`` and nothing blocks it (all of it, or
    nothing: destructive steps without ``allow_destructive`` hold back the rest)."""
    if not apply:
        return Outcome(tuple(survey(database, models, lowered, search)[1]))
    with migration_lock(database, lock_timeout):
        outcome = Outcome(tuple(survey(database, models, lowered, search)[1]))
        if not outcome.steps or outcome.blocked or (outcome.destructive and not allow_destructive):
            return outcome
        written = None
        if backup and is_sqlite(database) and any(step.rebuild for step in outcome.steps):
            written = backup_sqlite(database)
        apply_steps(database, outcome.steps, _name("migrate"), written)
    trigram.forget(database)
    fulltext.forget(database)
    return Outcome(outcome.steps, applied=True, backup=written)


def status(database: peewee.Database, models: Models, lowered: Lowered = (),
           search: Searched = ()) -> tuple[list[history.MigrationRecord], list[Step]]:
    """(applied MigrationRecords, pending steps)."""
    return history.applied(database), survey(database, models, lowered, search)[1]


def _name(kind: str) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{kind}"
