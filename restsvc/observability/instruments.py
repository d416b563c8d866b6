"""The metrics restsvc keeps, in one place: their names, help texts, labels,
and the few helpers that record them. Every label value comes from a bounded
set: route templates, status classes, the grant types and error codes of
RFC 6749, service methods that exist, ``in``/``out``."""
import bisect
import time

from ..health import is_shutting_down
from .metrics import DURATION_BUCKETS, Registry
from .multiprocess import WorkerFiles

KNOWN_GRANTS = frozenset(("client_credentials", "password", "refresh_token",
                          "authorization_code"))
STATUS_CLASSES = {code: f"{code // 100}xx" for code in range(100, 600)}
UNMATCHED = "unmatched"      # the route of a request no rule matched


class Instruments:
    def __init__(self, client_label=False, pool=None):
        registry = self.registry = Registry()
        self.requests = registry.counter(
            "restsvc_http_requests_total", "HTTP requests answered",
            ("method", "route", "status"))
        self.duration = registry.histogram(
            "restsvc_http_request_duration_seconds",
            "Time to the answer's status and headers (a stream's body is not counted)",
            ("method", "route"))
        self.in_flight = registry.gauge("restsvc_http_requests_in_flight",
                                        "Requests being served now")
        self.request_bytes = registry.counter(
            "restsvc_http_request_bytes_total", "Request body bytes announced", ("route",))
        self.response_bytes = registry.counter(
            "restsvc_http_response_bytes_total", "Response body bytes of complete answers",
            ("route",))
        self.client_requests = registry.counter(
            "restsvc_client_requests_total", "HTTP requests by client id",
            ("client",)) if client_label else None
        self.errors = registry.counter(
            "restsvc_errors_total", "Error answers by status and error code",
            ("status", "error"))
        self.tokens_issued = registry.counter(
            "restsvc_tokens_issued_total", "Tokens issued by the token endpoint", ("grant",))
        self.token_failures = registry.counter(
            "restsvc_token_failures_total", "Token requests refused", ("grant", "reason"))
        self.signin_refusals = registry.counter(
            "restsvc_signin_refusals_total", "Sign-ins refused by a sign-in limit", ("limit",))
        self.quota_refusals = registry.counter(
            "restsvc_quota_refusals_total", "Requests refused by a per-client or per-user quota",
            ("kind",))
        self.statements = registry.histogram(
            "restsvc_db_statement_duration_seconds", "Database statement execution time")
        self.connections = registry.gauge(
            "restsvc_db_connections", "Pooled PostgreSQL connections", ("state",))
        self.service_calls = registry.counter(
            "restsvc_service_calls_total", "Service method calls",
            ("service", "method", "outcome"))
        self.service_duration = registry.histogram(
            "restsvc_service_call_duration_seconds", "Service method call time",
            ("service", "method"))
        self.report_rows = registry.counter(
            "restsvc_report_rows_total", "Report rows written to CSV and XLSX outputs")
        self.file_bytes = registry.counter(
            "restsvc_file_bytes_total", "File content bytes stored and sent", ("direction",))
        self.event_streams = registry.gauge(
            "restsvc_event_streams", "Change feed streams open now (GET /rest/events)")
        self.draining = registry.gauge(
            "restsvc_draining", "1 while the instance drains before stopping (not ready)")
        self.pool = pool
        self.files = WorkerFiles(registry, self._sample)
        self.files.start()

    def _sample(self):
        """Gauges read when figures are written, not counted per request."""
        if self.pool is not None:
            self.connections.set(len(self.pool._in_use), ("in_use",))
            self.connections.set(len(self.pool._connections), ("idle",))

    def collect(self):
        merged = self.files.collect()
        # One flag for the instance: not a sum over the workers.
        merged["restsvc_draining"]["series"] = {(): int(is_shutting_down())}
        return merged

    def request_started(self):
        self.in_flight.inc()

    def request_ended(self, method, route, status, seconds, bytes_in, bytes_out, client_id):
        """A request's figures, under one hold of the lock (this is per request)."""
        status_class = STATUS_CLASSES.get(status, "other")
        index = bisect.bisect_left(DURATION_BUCKETS, seconds)
        requests, durations = self.requests.series, self.duration.series
        with self.registry.lock:
            self.in_flight.series[()] -= 1
            key = (method, route, status_class)
            requests[key] = requests.get(key, 0) + 1
            key = (method, route)
            counts = durations.get(key)
            if counts is None:
                counts = durations[key] = [0] * (len(DURATION_BUCKETS) + 2)
            counts[index] += 1
            counts[-1] += seconds
            if bytes_in:
                series = self.request_bytes.series
                series[(route,)] = series.get((route,), 0) + bytes_in
            if bytes_out:
                series = self.response_bytes.series
                series[(route,)] = series.get((route,), 0) + bytes_out
            if self.client_requests is not None and client_id is not None:
                series = self.client_requests.series
                series[(client_id,)] = series.get((client_id,), 0) + 1

    def error(self, status, error):
        # Error codes are fixed strings in restsvc; an application's own are
        # capped, so a code built from input cannot grow the series without end.
        if (str(status), error) not in self.errors.series and len(self.errors.series) >= 200:
            error = "other"
        self.errors.inc((str(status), error[:100]))

    def token(self, grant, error=None, limit=None):
        grant = grant if grant in KNOWN_GRANTS else "other"
        if error is None:
            self.tokens_issued.inc((grant,))
            return
        self.token_failures.inc((grant, error))
        if limit is not None:
            self.signin_refusals.inc((limit,))

    def service_call(self, service, method, outcome, started):
        self.service_calls.inc((service, method, outcome))
        self.service_duration.observe(time.perf_counter() - started, (service, method))
