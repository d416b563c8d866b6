"""``run.py --in-process N``: a service call against a load by id, in process.

On a shared machine wrk's requests per second move with everyone else's
load; CPU time per request in one process does much less. Both operations go
through the whole WSGI app (gate, token check, permissions, handler,
serialization) with prebuilt WSGI environments, taking turns (ABBA) for
several rounds; the figure is microseconds of CPU per request, and the ratio
is taken per round. Target: the service call costs at most 1.25x the load.
"""
import statistics
import time

from werkzeug.test import EnvironBuilder

TARGET = 1.25


def _environs(paths, token):
    return [EnvironBuilder(path=path, headers={"Authorization": f"Bearer {token}"}).get_environ()
            for path in paths]


def _cost(app, environs, count):
    """CPU microseconds per request; every answer must be 2xx."""
    def start_response(status, headers, exc_info=None):
        if not status.startswith("2"):
            raise RuntimeError(f"answered {status}")
    started = time.process_time()
    for i in range(count):
        body = app(dict(environs[i % len(environs)]), start_response)
        for _ in body:
            pass
        getattr(body, "close", lambda: None)()
    return (time.process_time() - started) / count * 1e6


def compare(app, token, operations, count, rounds):
    """``operations``: {label: [paths]}, the reference first. Prints µs/request and ratios."""
    environs = {label: _environs(paths, token) for label, paths in operations.items()}
    for label in environs:                      # warm-up: caches, SQL text, permissions
        _cost(app, environs[label], max(50, count // 10))
    costs = {label: [] for label in environs}
    labels = list(environs)
    for round_number in range(rounds):
        for label in labels[::-1] if round_number % 2 else labels:
            costs[label].append(_cost(app, environs[label], count))
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
          f"target: at most {TARGET}x {reference})")
    return 0 if worst <= TARGET else 1
