"""gunicorn settings and hooks for restsvc.

``restsvc serve`` runs gunicorn with these (its options override them); a
gunicorn started by hand gets the same with
``gunicorn -c python:restsvc.gunicorn_config restsvc.wsgi:app`` (from any
folder; settings from ``$RESTSVC_CONFIG``).

Why these values (restsvc/docs/operations.md "Running in production"):
- ``gthread`` workers with 16 threads each: a client that sends its body
  slowly ties up one thread, not a whole worker, so others keep being served;
  and the worker's liveness is its main loop's heartbeat, not the duration of
  a request, so a slow but steady upload is not killed at ``timeout``.
- ``timeout`` therefore only catches a worker that hangs as a whole.
- Drain on SIGTERM (``drain_seconds``): the instance first reports not ready
  (``/health/ready`` 503) and keeps serving, so the load balancer's health
  check takes it out before it stops accepting connections; then the usual
  graceful stop finishes the requests in flight (``graceful_timeout``). A
  second SIGTERM skips the rest of the drain.
- Change feed streams (``GET /rest/events``) are handed over to the stream
  process under ``restsvc serve`` (events/streamproc.py); without it they
  hold a thread each, capped by
  ``svc.events.max-streams-per-worker``; they end when the drain begins
  (and when a worker is told to stop), so the graceful stop does not wait
  for them and their clients reconnect elsewhere with their last event id.
- The webhook delivery worker and the stream process (``restsvc serve``;
  ``supervise``): children of
  the master, started when it is ready, started again when it dies, stopped
  once when the master exits; the workers gunicorn forks and replaces never
  touch them (events/supervisor.py).
- Forwarded headers: gunicorn believes none. ``forwarded_allow_ips`` is
  ``svc.trusted-proxies`` under ``restsvc serve`` (nobody here, for a
  gunicorn started by hand), and even a trusted proxy cannot set
  ``SCRIPT_NAME``/``PATH_INFO`` by header (a mismatch would be gunicorn's own
  HTML 500) or the scheme by gunicorn's rules: the app reads
  ``X-Forwarded-For``/``Forwarded``/``X-Forwarded-Proto`` itself, from the
  same trusted proxies only (restsvc/proxies.py), so one place decides.
- ``limit_request_line`` at gunicorn's maximum, 8190 bytes (its default is
  4094): a GET search carries its filter in the URL, and a longer request
  line is answered 414 (documented on those operations; the POST forms take
  the filter in the body, without that limit). It cannot go higher: 0, the
  only larger value, lets gunicorn's Python parser read a line of any
  length into memory. So the bound is gunicorn's, and its answer is made
  the service's: every request gunicorn refuses itself (414 request line,
  431 header fields, 400 malformed request) is answered in the error format,
  ``{"error", "details"}`` as JSON, not gunicorn's HTML page
  (``write_json_error``, installed in each worker).
- No control socket: gunicorn 27 puts it at one path per user
  (``$XDG_RUNTIME_DIR/gunicorn.ctl``), which several instances on one machine
  would share; give each instance its own with ``restsvc serve
  --control-socket PATH`` when you use ``gunicornc``.
"""
import functools
import gc
import json
import os
import signal
from types import FrameType
from typing import TYPE_CHECKING, Any

from gunicorn import util
from gunicorn.http.message import MAX_REQUEST_LINE

from .health import begin_shutdown, is_shutting_down
from .observability import multiprocess

if TYPE_CHECKING:
    from gunicorn.arbiter import Arbiter      # gunicorn has no type information

    from .events.supervisor import DeliverySupervisor

worker_class = "gthread"
workers = 2
threads = 16
timeout = 60
graceful_timeout = 30
keepalive = 5
limit_request_line = MAX_REQUEST_LINE       # 8190
control_socket_disable = True
forwarded_allow_ips = ""
forwarder_headers = ""
secure_scheme_headers: dict[str, str] = {}
drain_seconds = float(os.environ.get("RESTSVC_DRAIN_SECONDS", "10"))


def install_drain(arbiter: "Arbiter", seconds: float) -> None:
    """Make the master's SIGTERM start a drain of ``seconds`` before the graceful stop."""
    if seconds <= 0:
        return

    def handle_term() -> None:
        if is_shutting_down():           # the drain is over, or a second SIGTERM
            raise StopIteration          # gunicorn's graceful stop
        begin_shutdown()
        arbiter.log.info("SIGTERM: reporting not ready, serving %s s more, then stopping",
                         seconds)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    # The master's own signal handlers only queue; this one does the same.
    signal.signal(signal.SIGALRM, lambda sig, frame: arbiter.SIG_QUEUE.put_nowait(signal.SIGTERM))
    arbiter.handle_term = handle_term


def ready(arbiter: "Arbiter", drain: float) -> None:
    """The start-up summary's last lines (where it listens, its workers), then
    the drain on SIGTERM."""
    for listener in arbiter.LISTENERS:      # http://host:port, or unix:path
        arbiter.log.info("listening: %s", listener)
    cfg = arbiter.cfg
    arbiter.log.info("workers: %s (%s, %s threads each)", cfg.workers,
                     cfg.worker_class_str, cfg.threads)
    install_drain(arbiter, drain)


def when_ready(arbiter: "Arbiter") -> None:
    ready(arbiter, drain_seconds)


def supervise(arbiter: "Arbiter", supervisor: "DeliverySupervisor") -> None:
    """Run ``supervisor``'s delivery worker beside the master: started now,
    looked after at every turn of the master's loop (gunicorn calls
    ``manage_workers`` at least once a second and after a child exits);
    not started again once the instance drains (a stop signalled to every
    process at once, as a service manager does, would end each new one)."""
    supervisor.log = arbiter.log
    manage = arbiter.manage_workers

    def manage_workers() -> None:
        manage()
        if not is_shutting_down():
            supervisor.check(arbiter.LISTENERS)
    arbiter.manage_workers = manage_workers
    supervisor.check(arbiter.LISTENERS)


def write_json_error(line_limit: int, sock: Any, status: int, reason: str, message: str) -> None:
    """gunicorn's ``util.write_error`` in the service's error format: the
    answer to a request gunicorn refused before the application saw it."""
    if status == 414:
        error = "Request line too long"
        message = (f"The request line is longer than {line_limit} bytes; send a long "
                   f"filter or parameter list in the body of the operation's POST form")
    elif status >= 500:
        error, message = "Server error", ""
    else:
        error = reason
    body = json.dumps({"error": error, "details": message}).encode("ascii")
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json;charset=UTF-8\r\nCache-Control: no-store\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin-1") + body)


def post_worker_init(worker: Any) -> None:
    """Requests gunicorn refuses itself are answered in JSON (``write_json_error``).
    A worker told to stop (SIGTERM: the graceful stop, or a worker being
    replaced) ends its change feed streams first, so they do not hold the
    stop until ``graceful_timeout``."""
    from .events.feed import close_streams
    configured = worker.cfg.limit_request_line      # gunicorn caps it at its maximum
    line_limit = configured if 0 < configured < MAX_REQUEST_LINE else MAX_REQUEST_LINE
    util.write_error = functools.partial(write_json_error, line_limit)
    stop = worker.handle_exit

    def handle_exit(sig: int, frame: FrameType | None) -> None:
        close_streams()
        stop(sig, frame)
    signal.signal(signal.SIGTERM, handle_exit)
    # The app is built and lives as long as the worker: its objects (metadata,
    # plans, modules) leave the collector's generations, so a full collection
    # no longer walks them all (tests/benchmark/README.md, "One read path, first steps (issue 38)").
    gc.collect()
    gc.freeze()


def on_starting(arbiter: "Arbiter") -> None:
    """Before the workers fork: the directory where they leave their metrics."""
    multiprocess.prepare_directory()


def on_exit(arbiter: "Arbiter") -> None:
    multiprocess.remove_directory()
