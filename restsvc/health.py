"""Health of one instance, for a load balancer: is it live, is it ready.

Ready means: the instance is not shutting down, its database answers a
trivial query, and each file storage can be reached -- all within a short
time. The checks run on a thread of their own, one at a time per process: a
database or storage that hangs costs one (daemon) thread, and a request
arriving while a check is still running waits for that check, with the same
deadline, instead of piling up threads.

Shutting down is a flag shared by the gunicorn master and its workers (an
anonymous shared memory page, mapped before the workers are forked): the
master raises it on SIGTERM (``restsvc.gunicorn_config``) and every worker's
readiness answers 503 from then on, while requests are still served.
"""
import logging
import mmap
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as CheckTimeout

import peewee
from peewee import PeeweeException
from playhouse.pool import MaxConnectionsExceeded

from . import db
from .files.storage import FileStorage, StorageUnavailable

Problems = dict[str, str]       # component -> what is wrong

log = logging.getLogger("restsvc.health")

_shutting_down = mmap.mmap(-1, 1)       # MAP_SHARED | MAP_ANONYMOUS: shared across fork


def begin_shutdown() -> None:
    _shutting_down[0] = 1


def is_shutting_down() -> bool:
    return _shutting_down[0] == 1


class Readiness:
    def __init__(self, database: peewee.Database, storages: Iterable[FileStorage],
                 timeout: float) -> None:
        self.database = database
        self.storages = storages
        self.timeout = timeout
        self._lock = threading.Lock()
        self._running: Future[Problems] | None = None
        self._last_problems: Problems = {}

    def problems(self) -> Problems:
        """``{component: what is wrong}``; empty when the instance is ready."""
        if is_shutting_down():
            return {"instance": "shutting down"}
        try:
            problems = self._current_check().result(timeout=self.timeout)
        except CheckTimeout:
            problems = {"checks": f"no answer within {self.timeout} s"}
        if problems != self._last_problems:
            # Only changes are logged: a balancer asks every second or two.
            if problems:
                log.warning("not ready: %s", problems)
            else:
                log.info("ready again")
            self._last_problems = problems
        return problems

    def _current_check(self) -> "Future[Problems]":
        with self._lock:
            if self._running is None or self._running.done():
                self._running = Future()
                threading.Thread(target=self._check, args=(self._running,), daemon=True,
                                 name="readiness").start()
            return self._running

    def _check(self, future: "Future[Problems]") -> None:
        try:
            future.set_result(self._problems())
        except Exception as exc:     # handed to the request, which answers a logged 500
            future.set_exception(exc)

    def _problems(self) -> Problems:
        problems: Problems = {}
        try:
            db.execute(self.database, "SELECT 1").fetchone()
        except (PeeweeException, MaxConnectionsExceeded) as exc:
            problems["database"] = f"does not answer ({type(exc).__name__})"
        finally:
            db.release(self.database)
        for storage in self.storages:
            try:
                storage.check()
            except StorageUnavailable as exc:
                problems[f"fileStorage.{storage.name}"] = exc.reason
        return problems
