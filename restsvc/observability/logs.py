"""Log lines: the plain form, or one JSON object per line
(``svc.log.format``); either way every line written while a request is
served carries its request id (and trace id when tracing is on), a 500's
traceback included. ``svc.log.requests`` adds one line per request.

What a request line holds is chosen here, field by field: never a header,
token, secret, password, query string or body.
"""
import json
import logging
import sys
import time

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
    """Install restsvc's handler on the ``restsvc`` logger, once per process
    (a later app replaces it). A host that configured logging itself (the
    root logger has handlers) keeps its own unless JSON was asked for; the
    filter then goes on its handlers' way through ours only."""
    logger = logging.getLogger("restsvc")
    for handler in [h for h in logger.handlers if getattr(h, _HANDLER_MARK, False)]:
        logger.removeHandler(handler)
    request_logger = logging.getLogger(REQUEST_LOGGER)
    request_logger.setLevel(logging.INFO if settings.log_requests else logging.NOTSET)
    if logging.getLogger().handlers and settings.log_format != "json":
        return
    handler = _Stderr()
    setattr(handler, _HANDLER_MARK, True)
    handler.addFilter(RequestIdFilter(trace_id))
    handler.setFormatter(JsonFormatter() if settings.log_format == "json"
                         else logging.Formatter(PLAIN_FORMAT))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


class RequestLog:
    """``svc.log.requests``: one line per request on ``restsvc.request``."""

    def __init__(self):
        self.logger = logging.getLogger(REQUEST_LOGGER)

    def write(self, request, route, status, seconds, bytes_in, bytes_out):
        principal = getattr(request, "principal", None)
        fields = {
            "method": request.method, "route": route, "status": status,
            "duration_ms": round(seconds * 1000, 3), "bytes_in": bytes_in,
            "bytes_out": bytes_out,
            # As the server sees it; behind trusted proxies, the client's.
            "remote_addr": request.remote_addr,
            "client_id": principal.client_id if principal is not None else None,
            "username": principal.username if principal is not None and principal.is_user
                        else None,
        }
        self.logger.info("%s %s %s %.1fms", fields["method"], route, status,
                         fields["duration_ms"], extra={"request": fields})
