"""The metrics restsvc keeps, in one place: their names, help texts, labels,
and the few helpers that record them. Every label value comes from a bounded
set: known HTTP methods (``labels``), route templates, status classes, the
grant types and error codes of RFC 6749, service methods that exist,
``in``/``out``, client ids and tenant keys (capped)."""
import time
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from ..health import is_shutting_down
from ..jsonio import JsonObject
from .labels import client_label, method_label, tenant_label
from .metrics import DURATION_BUCKETS, Metric, Registry
from .multiprocess import WorkerFiles
from .records import Record, bytes_in

KNOWN_GRANTS = frozenset(("client_credentials", "password", "refresh_token",
                          "authorization_code"))
STATUS_CLASSES = {code: f"{code // 100}xx" for code in range(100, 600)}
UNMATCHED = "unmatched"      # the route of a request no rule matched


class Pool(Protocol):
    """What the metrics sample of a PostgreSQL pool (pgpool.Pool)."""

    def counts(self) -> tuple[int, int]: ...


class Instruments:
    def __init__(self, client_label: bool = False, pool: Pool | None = None,
                 tenant_label: bool = False) -> None:
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
        self.client_requests: Metric | None = registry.counter(
            "restsvc_client_requests_total", "HTTP requests by client id",
            ("client",)) if client_label else None
        # svc.metrics.tenant-label: requests and their time by the caller's tenant.
        self.tenant_requests: Metric | None = registry.counter(
            "restsvc_tenant_requests_total", "HTTP requests by the caller's tenant",
            ("tenant", "status")) if tenant_label else None
        self.tenant_seconds = registry.counter(
            "restsvc_tenant_request_seconds_total",
            "Time to the answers' status and headers, added up by the caller's tenant",
            ("tenant",)) if tenant_label else None
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
        # Filled per statement (``statements``), added up by ``add_records``.
        self.statement_times: list[float] = []
        # serving.Observer.drain: the requests' records, added up
        self.drain: Callable[[], None] | None = None
        self.pool = pool
        self.files = WorkerFiles(registry, self._sample)
        self.files.start()

    def _sample(self) -> None:
        """Before figures are written or read: the records of the requests
        answered so far, and the gauges sampled, not counted per request."""
        if self.drain is not None:
            self.drain()
        if self.pool is not None:
            in_use, idle = self.pool.counts()
            self.connections.set(in_use, ("in_use",))
            self.connections.set(idle, ("idle",))

    def collect(self) -> dict[str, JsonObject]:
        merged = self.files.collect()
        # One flag for the instance: not a sum over the workers.
        merged["restsvc_draining"]["series"] = {(): int(is_shutting_down())}
        return merged

    def add_records(self, records: Sequence[Record], in_flight: int) -> None:
        """A batch of requests' records (``serving``'s layout), under one hold
        of the lock; and the statements timed since the last batch."""
        # Counters' figures are numbers, the durations' histograms lists.
        requests = cast(dict[tuple[object, ...], float], self.requests.series)
        durations = cast(dict[tuple[object, ...], list[float]], self.duration.series)
        request_bytes = cast(dict[tuple[object, ...], float], self.request_bytes.series)
        response_bytes = cast(dict[tuple[object, ...], float], self.response_bytes.series)
        clients = cast(dict[tuple[object, ...], float], self.client_requests.series) \
            if self.client_requests is not None else None
        classes, bounds, width = STATUS_CLASSES, DURATION_BUCKETS, len(DURATION_BUCKETS) + 2
        times = self.statement_times
        statements = times[:len(times)]
        del times[:len(statements)]
        with self.registry.lock:
            self.in_flight.series[()] = in_flight
            for record in records:
                route = record.route or UNMATCHED
                status, seconds = record.status, record.seconds
                key: tuple[str, ...] = (method_label(record.method), route,
                                        classes.get(status, "other"))
                requests[key] = requests.get(key, 0) + 1
                key = key[:2]
                counts = durations.get(key)
                if counts is None:
                    counts = durations[key] = [0] * width
                counts[bisect_left(bounds, seconds)] += 1
                counts[-1] += seconds
                if record.length:
                    size = bytes_in(record.length)
                    if size:
                        request_bytes[(route,)] = request_bytes.get((route,), 0) + size
                if record.bytes_out:
                    response_bytes[(route,)] = response_bytes.get((route,), 0) + record.bytes_out
                if clients is not None and record.principal is not None:
                    key = (client_label(record.principal.client_id, clients),)
                    clients[key] = clients.get(key, 0) + 1
                if record.error is not None:
                    self._error(status, record.error)
            if self.tenant_requests is not None:
                self._by_tenant(records)
            if statements:
                counts = cast("list[float] | None", self.statements.series.get(()))
                if counts is None:
                    counts = self.statements.series[()] = [0] * width
                for seconds in statements:
                    counts[bisect_left(bounds, seconds)] += 1
                counts[-1] += sum(statements)

    def _by_tenant(self, records: Sequence[Record]) -> None:
        """The records counted by tenant (svc.metrics.tenant-label; under the
        registry's lock: ``add_records``). A loop of its own: with the label
        off, neither a request nor a batch does anything more."""
        requests = cast(dict[tuple[object, ...], float], cast(Metric, self.tenant_requests).series)
        seconds = cast(dict[tuple[object, ...], float], cast(Metric, self.tenant_seconds).series)
        classes = STATUS_CLASSES
        for record in records:
            principal = record.principal
            tenant = tenant_label(principal.tenant if principal is not None else None, seconds)
            key = (tenant, classes.get(record.status, "other"))
            requests[key] = requests.get(key, 0) + 1
            seconds[(tenant,)] = seconds.get((tenant,), 0) + record.seconds

    def _error(self, status: int, error: str) -> None:
        # Error codes are fixed strings in restsvc; an application's own are
        # capped, so a code built from input cannot grow the series without end.
        # (Under the registry's lock: ``add_records``.)
        series, key = self.errors.series, (str(status), error[:100])
        if key not in series and len(series) >= 200:
            key = (key[0], "other")
        series[key] = cast(float, series.get(key, 0)) + 1

    def token(self, grant: str | None, error: str | None = None, limit: str | None = None) -> None:
        grant = grant if grant in KNOWN_GRANTS else "other"
        if error is None:
            self.tokens_issued.inc((grant,))
            return
        self.token_failures.inc((grant, error))
        if limit is not None:
            self.signin_refusals.inc((limit,))

    def service_call(self, service: str, method: str, outcome: str, started: float) -> None:
        self.service_calls.inc((service, method, outcome))
        self.service_duration.observe(time.perf_counter() - started, (service, method))
