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
            instruments.in_flight.inc()
        try:
            if tracing is None:
                request, response = answer(environ)
            else:
                with tracing.server_span(environ) as span:
                    request, response = answer(environ)
                    tracing.finish(span, request.route or UNMATCHED, response.status_code)
        finally:
            if instruments is not None:
                instruments.in_flight.inc(amount=-1)
        seconds = time.perf_counter() - started
        route, status = request.route or UNMATCHED, response.status_code
        bytes_in, bytes_out = request.content_length or 0, body_size(response)
        if instruments is not None:
            principal = request.principal
            instruments.request(request.method, route, status, seconds, bytes_in, bytes_out,
                                principal.client_id if principal is not None else None)
            if request.error is not None:
                instruments.error(status, request.error)
        if self.request_log is not None:
            self.request_log.write(request, route, status, seconds, bytes_in, bytes_out)
        return request, response
