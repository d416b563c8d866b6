"""Log lines: the plain form, or one JSON object per line
(``svc.log.format``); either way every line written while a request is
served carries its request id (and trace id when tracing is on), a 500's
traceback included. ``svc.log.requests`` adds one line per request.

What a request line holds is chosen here, field by field: never a header,
token, secret, password, query string or body.
"""
import atexit
import json
import logging
import os
import sys
import threading
import time
from json.encoder import encode_basestring

from . import requestid

REQUEST_LOGGER = "restsvc.request"
_HANDLER_MARK = "_restsvc_handler"
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


class RequestIdFilter(logging.Filter):
    def __init__(self, trace_id=None):
        super().__init__()
        self.trace_id = trace_id        # tracing.current_trace_id when tracing is on

    def filter(self, record):
        record.request_id = requestid.current.get() or "-"
        if self.trace_id is not None and not hasattr(record, "trace_id"):
            record.trace_id = self.trace_id()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record):
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                    + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        if getattr(record, "trace_id", None):
            line["trace_id"] = record.trace_id
        request = getattr(record, "request", None)
        if request is not None:
            line.update(request)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class _Stderr(logging.StreamHandler):
    """The current ``sys.stderr`` at each line (a test runner swaps it)."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def configure(settings, trace_id=None):
    """Whether restsvc's own handler writes the log. Install restsvc's handler
    on the ``restsvc`` logger, once per process (a later app replaces it).
    A host that configured logging itself (the
    root logger has handlers) keeps its own unless JSON was asked for; the
    filter then goes on its handlers' way through ours only."""
    logger = logging.getLogger("restsvc")
    for handler in [h for h in logger.handlers if getattr(h, _HANDLER_MARK, False)]:
        logger.removeHandler(handler)
    request_logger = logging.getLogger(REQUEST_LOGGER)
    request_logger.setLevel(logging.INFO if settings.log_requests else logging.NOTSET)
    if logging.getLogger().handlers and settings.log_format != "json":
        return False
    handler = _Stderr()
    setattr(handler, _HANDLER_MARK, True)
    handler.addFilter(RequestIdFilter(trace_id))
    handler.setFormatter(JsonFormatter() if settings.log_format == "json"
                         else logging.Formatter(PLAIN_FORMAT))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    return True


class RequestLog:
    """``svc.log.requests``: one line per request (logger ``restsvc.request``).

    A line per request must cost little (README "Operating restsvc" has the
    figure): when restsvc's own handler writes the log (``configure``
    returned True), the line is put together here, in the same form as the
    handler's, and written to its stream in one call -- no LogRecord, no
    caller lookup, no general formatter. Under a host's own logging setup it
    goes through ``logging`` like any other line.

    Lines written directly are collected and written in batches, at the
    latest ``FLUSH_SECONDS`` after they were made (and at exit): one write per
    request, line-buffered, cost a get request more than everything else
    observability does. A line can therefore show up to half a second after
    the log lines written while its request was served."""

    FLUSH_SECONDS = 0.5
    MAX_PENDING = 512        # lines; more are written at once by the request that adds one

    def __init__(self, json_form, direct, trace_id=None):
        self.logger = logging.getLogger(REQUEST_LOGGER)
        self.json_form, self.direct, self.trace_id = json_form, direct, trace_id
        self._second, self._stamp = None, ""
        self._pending = []
        self._lock = threading.Lock()            # the pending lines
        self._write_lock = threading.Lock()      # one batch written at a time, in order
        self._flusher_pid = None        # the process whose flusher thread runs (gunicorn forks)

    def _add(self, line):
        with self._lock:
            self._pending.append(line)
            full = len(self._pending) >= self.MAX_PENDING
        if self._flusher_pid != os.getpid():
            self._start_flusher()
        if full:
            self.flush()

    def _start_flusher(self):
        with self._write_lock:
            if self._flusher_pid == os.getpid():
                return
            self._flusher_pid = os.getpid()
            threading.Thread(target=self._flush_periodically, name="restsvc-request-log",
                             daemon=True).start()
            atexit.register(self.flush)

    def _flush_periodically(self):
        while True:
            time.sleep(self.FLUSH_SECONDS)
            self.flush()

    def flush(self):
        """Write the lines collected so far, in the order they were made."""
        with self._write_lock:
            with self._lock:
                lines, self._pending = self._pending, []
            if lines:
                stream = sys.stderr
                stream.write("".join(lines))
                stream.flush()

    def write(self, request, route, status, seconds, bytes_in, bytes_out):
        principal = request.principal
        client_id = principal.client_id if principal is not None else None
        username = principal.username if principal is not None and principal.is_user else None
        millis = round(seconds * 1000, 3)
        # As the server sees it; behind trusted proxies, the client's.
        remote_addr = request.remote_addr
        if not self.direct:
            self.logger.info("%s %s %s %sms", request.method, route, status, millis, extra={
                "request": {"method": request.method, "route": route, "status": status,
                            "duration_ms": millis, "bytes_in": bytes_in, "bytes_out": bytes_out,
                            "remote_addr": remote_addr, "client_id": client_id,
                            "username": username}})
            return
        # A request id is well-formed (no character JSON escapes); a method
        # and a route template are few: escaped once each.
        request_id, method, route = requestid.current.get(), _known(request.method), _known(route)
        if not self.json_form:
            self._add(
                f"{self._timestamp()} INFO {REQUEST_LOGGER} [{request_id}] {remote_addr} "
                f"{client_id or '-'} {username or '-'} {method[1:-1]} {route[1:-1]} {status} "
                f"{millis}ms {bytes_out or 0}B\n")
            return
        trace_id = self.trace_id() if self.trace_id is not None else None
        self._add(
            f'{{"time": "{self._timestamp()}", "level": "INFO", "logger": "{REQUEST_LOGGER}", '
            f'"message": "{method[1:-1]} {route[1:-1]} {status} {millis}ms", '
            f'"request_id": "{request_id}", '
            + (f'"trace_id": "{trace_id}", ' if trace_id else "")
            + f'"method": {method}, "route": {route}, "status": {status}, '
            f'"duration_ms": {millis}, "bytes_in": {bytes_in}, '
            f'"bytes_out": {"null" if bytes_out is None else bytes_out}, '
            f'"remote_addr": {_json_text(remote_addr)}, "client_id": {_json_text(client_id)}, '
            f'"username": {_json_text(username)}}}\n')

    def _timestamp(self):
        now = time.time()
        second = int(now)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._stamp}.{int((now - second) * 1000):03d}Z"


def _json_text(value):
    return "null" if value is None else encode_basestring(value)


_escaped: dict[str, str] = {}


def _known(text):
    """``text`` as a JSON string, kept for the next time (bounded)."""
    found = _escaped.get(text)
    if found is None:
        if len(_escaped) >= 1000:
            _escaped.clear()
        found = _escaped[text] = encode_basestring(text)
    return found
