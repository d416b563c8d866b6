"""``run.py --app-cpu``: an app under gunicorn with the CPU time spent inside it counted.

gunicorn serves ``apptime:app``, which calls the app ``APPTIME_TARGET``
(``module:name``) and adds each request's thread CPU time inside it (the call
and the body's iteration) to two counters of the worker: requests and
nanoseconds, kept in a small file of ``APPTIME_DIR`` named after the worker's
pid and mapped into memory, so that ``totals`` reads them between two wrk runs
without asking the worker. What is not counted is gunicorn's own work:
accepting, parsing the request, writing the answer, closing.

Why: in a loop of WSGI calls (``inprocess.py``) an app's code and data stay
in the CPU's caches; under gunicorn every request's app work follows the
kernel's and gunicorn's, and costs two to three times as much (tests/benchmark/README.md,
"Inside the server (issue 41, seventh session)").
"""
import importlib
import mmap
import os
import struct
import time
from pathlib import Path

COUNTERS = struct.Struct("<QQ")     # requests, thread CPU nanoseconds inside the app
_thread_ns = time.thread_time_ns


class Counted:
    def __init__(self, inner, directory):
        self.inner, self.directory = inner, Path(directory)
        self.pid = self.counters = None
        self.requests = self.nanoseconds = 0

    def _open(self):
        """The counters of this process (a worker, forked after the import or not)."""
        path = self.directory / str(os.getpid())
        path.write_bytes(bytes(COUNTERS.size))
        with open(path, "r+b") as file:
            self.counters = mmap.mmap(file.fileno(), COUNTERS.size)
        self.pid, self.requests, self.nanoseconds = os.getpid(), 0, 0

    def __call__(self, environ, start_response):
        if self.pid != os.getpid():
            self._open()
        started = _thread_ns()
        result = self.inner(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        self.requests += 1
        self.nanoseconds += _thread_ns() - started
        COUNTERS.pack_into(self.counters, 0, self.requests, self.nanoseconds)
        return [body]


def totals(directory):
    """(requests, CPU seconds inside the app) so far, over the workers of ``directory``."""
    requests = nanoseconds = 0
    for path in Path(directory).iterdir():
        count, spent = COUNTERS.unpack(path.read_bytes()[:COUNTERS.size])
        requests, nanoseconds = requests + count, nanoseconds + spent
    return requests, nanoseconds / 1e9


def _target():
    module, _, name = os.environ["APPTIME_TARGET"].partition(":")
    return getattr(importlib.import_module(module), name)


if "APPTIME_TARGET" in os.environ:
    app = Counted(_target(), os.environ["APPTIME_DIR"])
