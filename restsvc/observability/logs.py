"""Log lines: the plain form, or one JSON object per line
(``svc.log.format``); either way every line written while a request is
served carries its request id (and trace id when tracing is on), a 500's
traceback included. ``svc.log.requests`` adds one line per request.

What a request line holds is chosen here, field by field: never a header,
token, secret, password, query string or body. A plain line is one line
whatever a caller put in a name, a path or a method: control characters
(C0, DEL, C1) and Unicode line breaks are written as escapes (``\\x0a``), in
every message of restsvc's plain handler and in the request lines.
"""
import json
import logging
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from . import requestid

if TYPE_CHECKING:
    from ..request import Request
    from ..security.gate import Principal
    from ..settings import Settings
    from .records import Record

ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]
TraceId = Callable[[], "str | None"]       # the current span's trace id (tracing.py)
# A caller's (principal, JSON fields, plain text) in the request lines.
_Caller = tuple["Principal | None", str, str]

REQUEST_LOGGER = "restsvc.request"
_HANDLER_MARK = "_restsvc_handler"
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))} \
    | {0x2028: "\\u2028", 0x2029: "\\u2029"}


def escape_controls(text: str) -> str:
    """``text`` with its control characters and line breaks as escapes: what
    a caller sends cannot start a log line of its own."""
    return text.translate(_ESCAPES)


class PlainFormatter(logging.Formatter):
    """The plain form; the message escaped, and in a traceback (which keeps
    its lines) the exceptions' own texts, which may quote what a caller sent."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(super().formatMessage(record))

    def formatException(self, ei: ExcInfo) -> str:
        text = super().formatException(ei)
        exc: BaseException | None = ei[1]
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:      # the chain, as the traceback shows it
            seen.add(id(exc))
            said = "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
            text = text.replace(said, escape_controls(said))
            exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        return text


class RequestIdFilter(logging.Filter):
    def __init__(self, trace_id: TraceId | None = None) -> None:
        super().__init__()
        self.trace_id = trace_id        # tracing.current_trace_id when tracing is on

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = requestid.current.get() or "-"
        if self.trace_id is not None and not hasattr(record, "trace_id"):
            record.trace_id = self.trace_id()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                    + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        trace_id = getattr(record, "trace_id", None)
        if trace_id:
            line["trace_id"] = trace_id
        request = getattr(record, "request", None)
        if request is not None:
            line.update(request)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class _Stderr(logging.StreamHandler[TextIO]):
    """The current ``sys.stderr`` at each line (a test runner swaps it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def configure(settings: "Settings", trace_id: TraceId | None = None) -> bool:
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
                         else PlainFormatter(PLAIN_FORMAT))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    return True


class RequestLog:
    """``svc.log.requests``: one line per request (logger ``restsvc.request``).

    A line per request must cost little (tests/benchmark/README.md
    "Observability: what it costs" has the figure): when restsvc's own handler writes the log (``configure``
    returned True), a request leaves only its record (``serving``), and the
    lines are put together here in batches, in the same form as the
    handler's, and written to its stream in one call -- no LogRecord, no
    caller lookup, no general formatter. A line therefore shows up to
    ``serving.FLUSH_SECONDS`` after the lines written while its request was
    served. Under a host's own logging setup, ``write`` sends a request's line
    through ``logging`` like any other, at once."""

    def __init__(self, json_form: bool, direct: bool, trace_id: TraceId | None = None) -> None:
        self.logger = logging.getLogger(REQUEST_LOGGER)
        self.json_form, self.direct, self.trace_id = json_form, direct, trace_id
        self.drain: Callable[[], None] | None = None          # serving.Observer.drain
        # (method, route, status) -> (JSON message head, JSON fields, plain text)
        self._answers: dict[tuple[str, str | None, int], tuple[str, str, str]] = {}
        self._callers: dict[tuple[str | None, int], _Caller] = {}

    def flush(self) -> None:
        """Write the lines of the requests answered so far."""
        if self.drain is not None:
            self.drain()

    def write(self, request: "Request", route: str, status: int, seconds: float, bytes_in: int,
              bytes_out: int | None) -> None:
        """One request's line through ``logging`` (not ``direct``)."""
        principal = request.principal
        client_id = principal.client_id if principal is not None else None
        username = principal.username if principal is not None and principal.is_user else None
        millis = round(seconds * 1000, 3)
        method = escape_controls(request.method)    # the host's formatter may not escape
        self.logger.info("%s %s %s %sms", method, route, status, millis, extra={
            "request": {"method": request.method, "route": route, "status": status,
                        "duration_ms": millis, "bytes_in": bytes_in, "bytes_out": bytes_out,
                        "remote_addr": request.remote_addr,   # behind trusted proxies, the client's
                        "client_id": client_id, "username": username}})

    def write_records(self, records: Iterable["Record"]) -> None:
        """The lines of ``serving``'s records, written in one call. What
        repeats from line to line (a route's method, template and status; a
        caller's address, client id and username) is put together once and
        kept (bounded); a line is then one ``%`` of a template."""
        offset = time.time() - time.perf_counter()      # the records' clock to the wall's
        answers, callers, stamp = self._answers, self._callers, ""
        second: int | None = None
        lines: list[str] = []
        add = lines.append
        json_form = self.json_form
        for record in records:
            answer = answers.get((record.method, record.route, record.status))
            if answer is None:
                answer = self._answer(record.method, record.route, record.status)
            principal, remote_addr = record.principal, record.remote_addr
            caller = callers.get((remote_addr, id(principal)))
            if caller is None or caller[0] is not principal:
                caller = self._caller(remote_addr, principal)
            wall = record.ended + offset
            if int(wall) != second:          # lines come many to a second
                second = int(wall)
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            millis = "%.3f" % (record.seconds * 1000)
            bytes_out, trace_id = record.bytes_out, record.trace_id
            if json_form:
                length = record.length
                add(_JSON_LINE % (
                    stamp, (wall - second) * 1000, answer[0], millis, record.request_id,
                    f'"trace_id": "{trace_id}", ' if trace_id else "", answer[1], millis,
                    int(length) if length and length.isdigit() else 0,
                    "null" if bytes_out is None else bytes_out, caller[1]))
            else:
                add(_PLAIN_LINE % (stamp, (wall - second) * 1000, record.request_id, caller[2],
                                   answer[2], millis, bytes_out or 0))
        stream = sys.stderr
        stream.write("".join(lines))
        stream.flush()

    def _answer(self, method: str, route: str | None, status: int) -> tuple[str, str, str]:
        """(JSON message head, JSON fields, plain text) of a method, route and status."""
        if len(self._answers) >= 1000:
            self._answers.clear()
        key, name = (method, route, status), route or "unmatched"
        method_json, route_json = encode_basestring(method), encode_basestring(name)
        found = self._answers[key] = (
            f"{method_json[1:-1]} {route_json[1:-1]} {status} ",
            f'"method": {method_json}, "route": {route_json}, "status": {status}, ',
            f"{escape_controls(method)} {escape_controls(name)} {status} ")
        return found

    def _caller(self, remote_addr: str | None, principal: "Principal | None") -> _Caller:
        """(principal, JSON fields, plain text) of who called, kept by the
        principal's identity (held: its id is not reused while kept)."""
        if len(self._callers) >= 1000:
            self._callers.clear()
        client_id = principal.client_id if principal is not None else None
        username = principal.username if principal is not None and principal.is_user else None
        found = self._callers[(remote_addr, id(principal))] = (
            principal,
            f'"remote_addr": {_json_text(remote_addr)}, "client_id": {_json_text(client_id)}, '
            f'"username": {_json_text(username)}}}\n',
            escape_controls(f"{remote_addr} {client_id or '-'} {username or '-'}"))
        return found


# A request id is well-formed (no character JSON escapes); the durations are
# milliseconds to the microsecond.
_JSON_LINE = (
    '{"time": "%s.%03dZ", "level": "INFO", "logger": "' + REQUEST_LOGGER + '", '
    '"message": "%s%sms", "request_id": "%s", %s%s"duration_ms": %s, "bytes_in": %d, '
    '"bytes_out": %s, %s')
_PLAIN_LINE = "%s.%03dZ INFO " + REQUEST_LOGGER + " [%s] %s %s%sms %sB\n"


def _json_text(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)
