"""What is observed of each request, around the app's own work: the server
span, then -- once the answer's status and headers are known -- the
request's figures for the metrics and its log line. Built only when metrics,
request lines or tracing are on; otherwise the app calls nothing here.

A request's own cost is kept to reading two clocks and appending one tuple
(a ``Record``) to a list: no lock, no label string, no formatting. The
records are taken in batches (``drain``) by a thread of this process every
``FLUSH_SECONDS``, by a scrape before it reads the figures, by the worker's
metrics file before it is written, and by a request that finds the list
full: the metrics add them up and the request lines are written then, in
one loop each. So what a scrape sees is exact (it drains first), and a
worker's file is as current as before.

``list.append`` and taking a list's first ``n`` items (a slice, then ``del``)
are each one step under the interpreter lock: a record appended while a batch
is taken stays for the next one, none is lost or counted twice.
"""
import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from itertools import count
from typing import TYPE_CHECKING

from werkzeug.wrappers import Response

from . import requestid
from ..request import Request
from .records import Record, bytes_in
from ..responses import body_size

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from .instruments import Instruments
    from .logs import RequestLog
    from .tracing import Tracing

FLUSH_SECONDS = 0.5
MAX_RECORDS = 4096       # a request that finds more drains them itself

log = logging.getLogger("restsvc.observability")
_clock = time.perf_counter
_request_id = requestid.current.get
# A Record made by the tuple's own __new__, one C call: ``Record(...)`` would
# run the Python-level __new__ NamedTuple writes, on every request.
_new_tuple = tuple.__new__


class Observer:
    def __init__(self, instruments: "Instruments | None" = None,
                 request_log: "RequestLog | None" = None, tracing: "Tracing | None" = None) -> None:
        self.instruments = instruments
        self.request_log = request_log
        self.tracing = tracing
        # Lines written by restsvc's own handler are made from the records;
        # under a host's logging setup, a line goes through ``logging`` at
        # once (its filters read the request's context).
        self.lines = request_log if request_log is not None and request_log.direct else None
        self.logged = request_log if request_log is not None and not request_log.direct else None
        self.trace_id = self.lines.trace_id if self.lines is not None else None
        self.records: list[Record] = []
        self.aborted: list[None] = []      # requests whose answer raised: they only end
        self._start = count().__next__     # one C call per request: atomic
        self._reads = 0                # calls of ``_start`` made by ``drain``
        self._ended = 0
        self._lock = threading.Lock()  # one drain at a time
        if request_log is not None:
            request_log.drain = self.drain
        if instruments is not None:
            instruments.drain = self.drain
        _drainer.add(self)

    def forget(self) -> None:
        """In a forked child: the parent's records are the parent's."""
        del self.records[:]
        del self.aborted[:]
        self._start, self._reads, self._ended = count().__next__, 0, 0
        self._lock = threading.Lock()

    def observe(self, answer: Callable[[Request], Response], request: Request) -> Response:
        """``answer(request)`` -> its response, observed."""
        self._start()
        started = _clock()
        environ = request.environ
        tracing, trace_id = self.tracing, None
        try:
            if tracing is None:
                response = answer(request)
                ended = _clock()
            else:
                with tracing.server_span(environ) as span:
                    response = answer(request)
                    ended = _clock()
                    tracing.finish(span, request.route or "unmatched", response.status_code)
                    if self.trace_id is not None:
                        trace_id = self.trace_id()
                    if self.logged is not None:      # in the span: the line has its trace id
                        self._log(self.logged, request, response, ended - started, environ)
        except BaseException:
            self.aborted.append(None)
            raise
        records = self.records
        records.append(_new_tuple(Record, (
            ended, ended - started, request.method, request.route, response.status_code,
            environ.get("CONTENT_LENGTH"), body_size(response), request.principal,
            environ.get("REMOTE_ADDR"), _request_id(), trace_id, request.error)))
        if self.logged is not None and tracing is None:
            self._log(self.logged, request, response, ended - started, environ)
        if len(records) >= MAX_RECORDS:
            self.drain()
        return response

    @staticmethod
    def _log(logged: "RequestLog", request: Request, response: Response, seconds: float,
             environ: "WSGIEnvironment") -> None:
        logged.write(request, request.route or "unmatched", response.status_code, seconds,
                          bytes_in(environ.get("CONTENT_LENGTH")), body_size(response))

    def drain(self) -> None:
        """The records so far, added to the metrics and written as lines."""
        with self._lock:
            records, aborted = self.records, self.aborted
            batch = records[:len(records)]
            del records[:len(batch)]
            failed = len(aborted)
            del aborted[:failed]
            self._ended += len(batch) + failed
            if self.instruments is not None:
                started = self._start() - self._reads
                self._reads += 1
                # A request may end between the reads: a gauge, not a count.
                in_flight = started - self._ended - len(records) - len(aborted)
                self.instruments.add_records(batch, max(in_flight, 0))
            if self.lines is not None and batch:
                try:
                    self.lines.write_records(batch)
                except (OSError, ValueError):     # the stream is closed: lines are lost
                    pass


class _Drainer:
    """One thread per process drains every observer (weakly held: an app
    that is gone is forgotten), and once more at exit."""

    def __init__(self) -> None:
        self.observers: weakref.WeakSet[Observer] = weakref.WeakSet()
        self.pid: int | None = None
        os.register_at_fork(after_in_child=self._after_fork)
        atexit.register(self.drain_all)

    def add(self, observer: Observer) -> None:
        self.observers.add(observer)
        if self.pid != os.getpid():
            self.pid = os.getpid()
            threading.Thread(target=self._run, name="restsvc-observer", daemon=True).start()

    def _after_fork(self) -> None:
        for observer in list(self.observers):
            observer.forget()
        self.pid = None
        if self.observers:
            self.add(next(iter(self.observers)))

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            try:
                self.drain_all()
            except Exception:        # a closed stream: the next round tries again
                log.warning("observability: cannot drain the requests' records", exc_info=True)

    def drain_all(self) -> None:
        for observer in list(self.observers):
            observer.drain()


_drainer = _Drainer()
