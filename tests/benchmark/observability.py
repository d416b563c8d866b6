"""What observability costs on the hot path (issue 23): the same app with
metrics, JSON logs and request lines on, and with all of them off, in one
run, in process.

    python tests/benchmark/observability.py [--rounds 9] [--seconds 1.5]

Both apps work on one SQLite database prepared like the benchmark's
(``dataset.prepare``); each round times every variant with the CPU time of
this process (the machine's other load does not count), the variants take
turns (ABBA...), and the figure is the median of the per-round ratios (with
its quartiles, and the ratio of the totals).
Request lines go to /dev/null: their formatting and the write are counted,
a terminal is not. A request leaves records that are added up and written
in batches (``restsvc/observability/serving.py``): each round ends with the
app's batch drained inside the timed part, so no variant's batch is counted
in another's round. Target: on costs at most 5% more than off (get, list).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import prepare  # noqa: E402
from inprocess import _answer, _environs, one_answer  # noqa: E402

TARGET = 1.05
OPERATIONS = {"get": "/rest/entities/Customer/{id}", "list": "/rest/entities/Customer?limit=50"}
VARIANTS = {
    "off": {"metrics_path": "", "log_format": "plain", "log_requests": False,
            "slow_statement": 0.0},
    "metrics": {"metrics_path": "/metrics", "slow_statement": 0.0},
    # svc.metrics.tenant-label (restsvc/docs/tenants.md "Metrics"): its batch loop's cost
    "metrics+tenants": {"metrics_path": "/metrics", "metrics_tenant_label": True,
                        "slow_statement": 0.0},
    "metrics+json logs": {"metrics_path": "/metrics", "log_format": "json", "log_requests": True,
                          "slow_statement": 0.0},
}


def switching(app):
    """Models use one database proxy per process: point it at this app's
    database (the instrumented one or not) before each of its requests."""
    from restsvc.db import database_proxy

    def call(environ, start_response):
        if database_proxy.obj is not app.database:
            database_proxy.initialize(app.database)
        return app(environ, start_response)
    call.app = app
    return call


def cpu_per_request(app, environs, count):
    """CPU µs of this process per request, the app's pending records drained."""
    observer = app.app.observer
    started = time.process_time()
    for i in range(count):
        _answer(app, environs[i % len(environs)], None)
    if observer is not None:
        observer.drain()
    return (time.process_time() - started) / count * 1e6


def compare(apps, paths, token, rounds, seconds):
    """{app name: [CPU µs per request, one per round]}; the apps take turns."""
    environs = _environs("GET", paths, token, None)
    counts = {name: max(20, int(seconds * 1e6 / cpu_per_request(app, environs, 50)))
              for name, app in apps.items()}          # warm-up, and how many fill ``seconds``
    figures = {name: [] for name in apps}
    order = list(apps)
    for round_number in range(rounds):
        for name in order[::-1] if round_number % 2 else order:
            figures[name].append(cpu_per_request(apps[name], environs, counts[name]))
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=1.5)
    args = parser.parse_args()
    from restsvc.app import RestApp
    workdir = Path(tempfile.mkdtemp(prefix="restsvc-obs-bench-"))
    base, _, token, ids = prepare(workdir)
    sys.stderr = open(os.devnull, "w")
    apps = {name: switching(RestApp(replace(base.settings, init_schema=False, **changes)))
            for name, changes in VARIANTS.items()}
    print(f"{'operation':<10}{'variant':<20}{'CPU µs/request':>16}{'ratio':>8}{'quartiles':>14}"
          f"{'of totals':>11}  (rounds)")
    worst = 0
    for operation, path in OPERATIONS.items():
        paths = [path.format(id=i) for i in ids[:200]] if "{id}" in path else [path]
        for app in apps.values():
            status, _ = one_answer(app, "GET", paths[0], token)
            assert status.startswith("200"), status
        figures = compare(apps, paths, token, args.rounds, args.seconds)
        off = figures["off"]
        for name, cpu in figures.items():
            ratios = [a / b for a, b in zip(cpu, off)]
            ratio = statistics.median(ratios)
            if name != "off":
                worst = max(worst, ratio)
            low, _, high = statistics.quantiles(ratios, n=4)
            print(f"{operation:<10}{name:<20}{statistics.median(cpu):>16.1f}{ratio:>8.3f}"
                  f"{f'{low:.3f}-{high:.3f}':>14}{sum(cpu) / sum(off):>11.3f}  "
                  f"({min(ratios):.3f}-{max(ratios):.3f})")
    print(f"(medians of {args.rounds} rounds; target: at most {TARGET:.2f}x off)")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
