"""One scrape sees the whole instance: every gunicorn worker writes its
figures to a file of its own in a directory the master made before forking
(``$RESTSVC_METRICS_DIR``), and the worker that answers a scrape adds them up
-- what ``prometheus_client``'s multiprocess mode does, with a JSON file per
worker instead of its mmap files.

A worker writes its file every ``interval`` seconds from a thread (only when
something changed; the requests' pending records added up first), never on a
request's way: so a scrape may miss the last second of the other workers'
requests, and counts catch up at the next one; this worker's own are exact.
A worker that died keeps its counts (its file stays: counters never go back),
but its gauges (requests in flight, connections in use) no longer count.
Without the directory (one process, tests, an embedding host) a scrape sees
this process alone.
"""
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from ..jsonio import JsonObject
from .metrics import GAUGE, Registry, merge

ENVIRONMENT = "RESTSVC_METRICS_DIR"
_PREFIX = "worker-"

log = logging.getLogger("restsvc.metrics")


def base_directory() -> str | None:
    """Where instances make their directories: shared memory when there is
    some (the files are rewritten every second; no disk needs to see that)."""
    shared = "/dev/shm"
    return shared if os.path.isdir(shared) and os.access(shared, os.W_OK) else None


def prepare_directory() -> str:
    """In the gunicorn master, before the workers fork: a fresh directory for
    this instance (two instances on one machine never mix their figures)."""
    os.environ[ENVIRONMENT] = tempfile.mkdtemp(prefix="restsvc-metrics-", dir=base_directory())
    return os.environ[ENVIRONMENT]


def remove_directory() -> None:
    directory = os.environ.pop(ENVIRONMENT, None)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


class WorkerFiles:
    def __init__(self, registry: Registry, before_write: Callable[[], None] | None = None,
                 interval: float = 1.0, directory: str | None = None) -> None:
        directory = directory or os.environ.get(ENVIRONMENT)
        self.registry = registry
        self.directory = Path(directory) if directory else None
        self.before_write = before_write        # refreshes sampled gauges (pool use)
        self.interval = interval
        self._written: str | None = None
        self._stop = threading.Event()

    def start(self) -> None:
        if self.directory is None:
            return
        os.register_at_fork(after_in_child=self._after_fork)
        self._start_thread()

    def _start_thread(self) -> None:
        self._written = None
        threading.Thread(target=self._run, daemon=True, name="metrics-writer").start()

    def _after_fork(self) -> None:
        # A child forked from a process that served requests starts from zero.
        self.registry.reset()
        self._start_thread()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.write()
            except OSError:
                log.warning("metrics: cannot write this worker's figures", exc_info=True)

    def stop(self) -> None:
        self._stop.set()

    def write(self) -> None:
        text = json.dumps(self._own_snapshot())
        if text == self._written:
            return
        assert self.directory is not None       # started only with a directory
        path = self.directory / f"{_PREFIX}{os.getpid()}.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)          # a reader sees the old file or the new one
        self._written = text

    def _own_snapshot(self) -> dict[str, JsonObject]:
        if self.before_write is not None:
            self.before_write()
        return self.registry.snapshot()

    def collect(self) -> dict[str, JsonObject]:
        """The instance's figures, merged: this process's live ones plus every
        other worker's last file."""
        snapshots = [self._own_snapshot()]
        if self.directory is not None:
            own = f"{_PREFIX}{os.getpid()}.json"
            for path in sorted(self.directory.glob(f"{_PREFIX}*.json")):
                if path.name == own:
                    continue
                try:
                    snapshot: dict[str, JsonObject] = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue                  # a worker's file removed meanwhile
                if not _alive(int(path.stem[len(_PREFIX):])):
                    snapshot = {name: metric for name, metric in snapshot.items()
                                if metric["kind"] != GAUGE}
                snapshots.append(snapshot)
        return merge(snapshots)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
