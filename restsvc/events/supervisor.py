"""A worker beside ``restsvc serve``, a child of the gunicorn master: the
webhook delivery worker, and the stream process (streamproc.py).

The master starts it when it is ready (gunicorn's ``when_ready``), looks after
it at every turn of its loop (at least once a second, and at once after a
child exits) and starts it again when it has died -- after 1 s, doubling up to
``MAX_BACKOFF`` while it keeps dying young. Only the master does any of this:
the workers gunicorn forks and replaces (``kill -HUP`` of the master, a worker
killed or restarted) never touch it. When the master exits, it is stopped
once: SIGTERM, the attempts in flight get ``grace`` seconds, then SIGKILL.

Whether it is alive is read from a pipe only the child holds the writing end
of: it becomes readable (end of file) when the child is gone, whoever reaps
the child (gunicorn's own ``waitpid(-1)`` reaps every child of the master).
"""
from __future__ import annotations

import os
import select
import signal
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Protocol

MAX_BACKOFF = 30.0
HEALTHY_AFTER = 60.0        # a worker that lived this long starts the backoff afresh


class Closable(Protocol):
    def close(self) -> None: ...


class Logger(Protocol):
    def info(self, msg: str, *args: object) -> None: ...

    def warning(self, msg: str, *args: object) -> None: ...


class DeliverySupervisor:
    """``main(master_pid)`` is the child's work; its return value the exit code.
    ``name``: what the log calls it."""

    def __init__(self, main: Callable[[int], int], grace: float, log: Logger,
                 name: str = "webhook delivery worker") -> None:
        self._main = main
        self.name = name
        self.grace = grace
        self.log = log
        self._owner = os.getpid()
        self.pid: int | None = None
        self._life: int | None = None       # the pipe's reading end (EOF: the child is gone)
        self._started = 0.0
        self._backoff = 0.0
        self._next_start = 0.0
        self._stopped = False

    def _is_owner(self) -> bool:
        return os.getpid() == self._owner and not self._stopped

    def check(self, inherited: Iterable[Closable] = ()) -> None:
        """Start the worker unless it runs (or is waiting out its backoff);
        ``inherited``: what the child closes at once (the master's listeners)."""
        if not self._is_owner():
            return
        if self.pid is not None:
            if not self._is_gone(0):
                return
            self._forget()
        if time.monotonic() >= self._next_start:
            self._start(inherited)

    def stop(self) -> None:
        """Stop the worker, once; in any process but the master, nothing."""
        if not self._is_owner():
            return
        self._stopped = True
        if self.pid is None:
            return
        pid = self.pid
        self._signal(signal.SIGTERM)
        if not self._is_gone(self.grace):
            self.log.warning("%s (pid %s) still busy after %s s: killed",
                             self.name, pid, self.grace)
            self._signal(signal.SIGKILL)
            self._is_gone(5)
        self._forget()
        self.log.info("%s (pid %s) stopped", self.name, pid)

    def _start(self, inherited: Iterable[Closable]) -> None:
        life, alive = os.pipe()
        pid = os.fork()
        if pid == 0:        # the child: nothing of the master's may run here
            code = 1
            try:
                os.close(life)
                _reset_signals()
                for item in inherited:
                    item.close()
                code = self._main(self._owner)
            except BaseException:       # noqa: B036
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(alive)
        self.pid, self._life, self._started = pid, life, time.monotonic()
        self.log.info("%s started (pid %s)", self.name, pid)

    def _forget(self) -> None:
        """The child is gone: reap it (unless gunicorn did) and plan the next start."""
        pid, lived = self.pid, time.monotonic() - self._started
        if self._life is not None:
            os.close(self._life)
        self.pid = self._life = None
        try:
            if pid is not None:
                os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if self._stopped:
            return
        self._backoff = 1.0 if lived >= HEALTHY_AFTER else min(
            max(self._backoff * 2, 1.0), MAX_BACKOFF)
        self._next_start = time.monotonic() + self._backoff
        self.log.warning("%s (pid %s) exited; starting it again in %g s",
                         self.name, pid, self._backoff)

    def _is_gone(self, seconds: float) -> bool:
        if self._life is None:
            return True
        readable, _, _ = select.select([self._life], [], [], seconds)
        return bool(readable)

    def _signal(self, sig: int) -> None:
        try:
            if self.pid is not None:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            pass


def _reset_signals() -> None:
    """The master's handlers (gunicorn queues signals for its own loop) do not
    belong in the child: every Python handler goes back to the default."""
    for sig in signal.valid_signals():
        try:
            if callable(signal.getsignal(sig)):
                signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
