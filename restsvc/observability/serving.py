"""What is observed of each request, around the app's own work: requests in
flight, the server span, then -- once the answer's status and headers are
known -- the request's metrics and its log line. Built only when metrics,
request lines or tracing are on; otherwise the app calls nothing here."""
import time

from ..web import body_size
from .instruments import UNMATCHED


class Observer:
    def __init__(self, instruments=None, request_log=None, tracing=None):
        self.instruments = instruments
        self.request_log = request_log
        self.tracing = tracing

    def observe(self, answer, environ):
        """``answer(environ)`` -> (request, response), observed."""
        started = time.perf_counter()
        instruments, tracing = self.instruments, self.tracing
        if instruments is not None:
            instruments.request_started()
        try:
            if tracing is None:
                request, response = answer(environ)
                self._record(request, response, started)
            else:
                with tracing.server_span(environ) as span:
                    request, response = answer(environ)
                    tracing.finish(span, request.route or UNMATCHED, response.status_code)
                    self._record(request, response, started)     # the log line has the trace id
        except BaseException:
            if instruments is not None:
                instruments.in_flight.inc(amount=-1)
            raise
        return request, response

    def _record(self, request, response, started):
        seconds = time.perf_counter() - started
        route, status = request.route or UNMATCHED, response.status_code
        # From the environ: Werkzeug's content_length parses the headers.
        length = request.environ.get("CONTENT_LENGTH")
        bytes_in = int(length) if length and length.isdigit() else 0
        bytes_out = body_size(response)
        instruments = self.instruments
        if instruments is not None:
            principal = request.principal
            instruments.request_ended(request.method, route, status, seconds, bytes_in, bytes_out,
                                      principal.client_id if principal is not None else None)
            if request.error is not None:
                instruments.error(status, request.error)
        if self.request_log is not None:
            self.request_log.write(request, route, status, seconds, bytes_in, bytes_out)
