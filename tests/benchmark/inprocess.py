"""In-process timing: WSGI callables called directly.

``compare``: restsvc and the baseline, operation by operation. ``compare_operations``
(``run.py --in-process N``): operations of restsvc against a reference one
(a service call against a load by id; target: at most ``TARGET`` times).

No server, no sockets, no wrk: what is left is the cost of one request in
Python, which is what the code decides. The two apps take turns per round
(ABBA...), each round long enough to be timed (``seconds`` per app and
operation), so a change in the machine's load hits both alike.
"""
import gc
import io
import statistics
import time

from werkzeug.test import EnvironBuilder


def _environs(method, paths, token, body):
    headers = {"Authorization": f"Bearer {token}", "Host": "localhost"}
    return [EnvironBuilder(path=path, method=method, headers=headers,
                           content_type="application/json" if body else None,
                           data=body).get_environ() for path in paths]


def _start_response(status, headers, exc_info=None):
    _start_response.status, _start_response.headers = status, headers


def one_answer(app, method, path, token, body=None):
    """(status line, body bytes) of one request."""
    status, _, payload = one_response(app, method, path, token, body)
    return status, payload


def one_response(app, method, path, token, body=None):
    """(status line, header list, body bytes) of one request."""
    body = body.encode("utf-8") if body else None
    status, payload = _answer(app, _environs(method, [path], token, body)[0], body)
    return status, _start_response.headers, payload


def _answer(app, environ, body):
    environ = dict(environ)
    environ["wsgi.input"] = io.BytesIO(body or b"")
    result = app(environ, _start_response)
    try:
        payload = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return _start_response.status, payload


def _per_request(app, environs, body, count, cold=None):
    """(wall-clock µs, CPU µs of this process) per request. On a busy machine the
    wall clock also counts the time spent waiting for a core; the CPU time
    does not (nor does it count waiting for the disk: fsync on commit).
    ``cold``: called before each request, outside the time counted (``evicting``)."""
    if cold is not None:
        return _cold_per_request(app, environs, body, count, cold)
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(count):
        _answer(app, environs[i % len(environs)], body)
    return ((time.perf_counter() - started) / count * 1e6,
            (time.process_time() - cpu) / count * 1e6)


def _cold_per_request(app, environs, body, count, cold):
    wall = cpu = 0.0
    for i in range(count):
        cold()
        started, processed = time.perf_counter(), time.process_time()
        _answer(app, environs[i % len(environs)], body)
        wall += time.perf_counter() - started
        cpu += time.process_time() - processed
    return wall / count * 1e6, cpu / count * 1e6


def evicting(kib):
    """A function that writes ``kib`` KiB of memory of its own, a page at a time:
    what a request left in the CPU's caches is gone afterwards, as it is
    under gunicorn, where the kernel's and the server's work for the next
    connection (and the other processes') run between two requests of a
    worker (tests/benchmark/README.md, "Cold caches (issue 41, nineteenth session)")."""
    junk, page = bytearray(kib * 1024), b"\1" * 4096

    def evict():
        for start in range(0, len(junk), 4096):
            junk[start:start + 4096] = page
    return evict


def repeat(app, method, paths, token, body, count):
    """``count`` requests over ``paths``: (wall µs, CPU µs) per request."""
    body = body.encode("utf-8") if body else None
    return _per_request(app, _environs(method, paths, token, body), body, count)


def compare(apps, method, paths, token, body, rounds, seconds, cold=None):
    """{app name: [(wall µs, CPU µs) per request, one pair per round]}; ``cold``
    as for ``_per_request``."""
    body = body.encode("utf-8") if body else None
    environs = _environs(method, paths, token, body)
    counts = {}
    for name, app in apps.items():          # warm-up, and how many calls fill ``seconds``
        probe, _ = _per_request(app, environs, body, 20, cold)
        counts[name] = max(20, int(seconds * 1e6 / probe))
    figures = {name: [] for name in apps}
    order = list(apps)
    for round_number in range(rounds):
        for name in order[::-1] if round_number % 2 else order:
            figures[name].append(_per_request(apps[name], environs, body, counts[name], cold))
    return figures


def summary(values):
    """``median (min-max)``."""
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


TARGET = 1.25


def compare_operations(app, token, operations, count, rounds, target=TARGET):
    """``operations``: {label: [paths]} of GETs, the reference first. Prints CPU
    µs/request and per-round ratios to the reference; 0 when within ``target``."""
    environs = {label: _environs("GET", paths, token, None) for label, paths in operations.items()}
    for label in environs:                      # warm-up: caches, SQL text, permissions
        _per_request(app, environs[label], None, max(50, count // 10))
    costs = {label: [] for label in environs}
    labels = list(environs)
    for round_number in range(rounds):
        for label in labels[::-1] if round_number % 2 else labels:
            costs[label].append(_per_request(app, environs[label], None, count)[1])
    reference = labels[0]
    print(f"\n{'operation (in process)':<60}{'µs/request':>12}{'ratio':>8}  per round")
    worst = 0
    for label in labels:
        ratios = [a / b for a, b in zip(costs[label], costs[reference])]
        ratio = statistics.median(ratios)
        worst = max(worst, ratio)
        print(f"{label:<60}{statistics.median(costs[label]):>12.0f}{ratio:>8.2f}  "
              + " ".join(f"{r:.2f}" for r in ratios))
    print(f"(medians of {rounds} rounds of {count} requests each, CPU time of this process; "
          f"target: at most {target}x {reference})")
    return 0 if worst <= target else 1


def ratio_row(label, width, costs, base, other):
    """A printed row: the medians of ``costs[base]`` and ``costs[other]``
    (per-request figures of rounds taken in turns), then the median of their
    per-round ratios (other / base)."""
    ratios = [mine / theirs for mine, theirs in zip(costs[other], costs[base])]
    return (f"{label:<{width}}{statistics.median(costs[base]):>14.1f}"
            f"{statistics.median(costs[other]):>10.1f}{statistics.median(ratios):>8.2f}")


def as_served(app, slowed=False):
    """``app`` with the process's heap as a served worker has it: collected,
    then frozen (restsvc/gunicorn_config.py freezes after start), so the
    collector's walks over the objects made at start-up -- more of them with
    every module the application imports -- do not count in the requests.
    ``slowed`` (under valgrind, about 50 times slower): the token's recheck,
    which a worker makes once per half second of wall time, once a minute, so
    that its share of a request stays about what it is at full speed instead
    of moving with how fast the machine runs valgrind."""
    if slowed:
        from restsvc.security import gate
        gate.RECHECK_SECONDS = 60.0
    gc.collect()
    gc.freeze()
    return app
