"""Benchmark (issue 20): create and update with entity history on against
the same entity without it, in process, same run.

    python tests/benchmark/history.py [--count 300] [--rounds 5] [--database-url URL]

``POST /rest/entities/Customer`` and ``PUT /rest/entities/Customer/<id>``
(a new name each time, so every update is recorded) take turns with history
on (the demo's declaration: one HistoryItem per write, the row's values read
before an update, in one transaction) and off (the same entity with its
history switched off in the metadata). Target: with history, each costs at
most 1.25x without (CPU time per request, median of the per-round ratios).
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import prepare                     # noqa: E402
from inprocess import _answer, _environs        # noqa: E402

TARGET = 1.25


def _writes(app, token, method, paths, count):
    """CPU µs per request of ``count`` writes, each with its own body."""
    bodies = [json.dumps({"name": f"bench {time.monotonic_ns()} {i}"}).encode()
              for i in range(count)]
    environs = [_environs(method, [paths[i % len(paths)]], token, bodies[i])[0]
                for i in range(count)]
    cpu = time.process_time()
    for environ, body in zip(environs, bodies):
        status, payload = _answer(app, environ, body)
        if not status.startswith(("200", "201")):
            raise SystemExit(f"{method} answered {status}: {payload[:200]!r}")
    return (time.process_time() - cpu) / count * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url", help="default: SQLite in a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, ids = prepare(Path(workdir), args.database_url)
        meta = app.metadata.entity("Customer")
        recorded = meta.history
        updates = [f"/rest/entities/Customer/{key}" for key in ids[:200]]
        operations = {"create": ("POST", ["/rest/entities/Customer"]), "update": ("PUT", updates)}
        costs = {(name, on): [] for name in operations for on in (False, True)}
        for round_number in range(args.rounds + 1):       # round 0 warms up
            for on in ((False, True) if round_number % 2 else (True, False)):
                meta.history = recorded if on else None
                for name, (method, paths) in operations.items():
                    spent = _writes(app, token, method, paths, args.count)
                    if round_number:
                        costs[name, on].append(spent)
        meta.history = recorded
        print(f"\n{'operation (in process)':<40}{'off µs':>9}{'on µs':>9}{'ratio':>8}  per round")
        worst = 0
        for name in operations:
            off, on = costs[name, False], costs[name, True]
            ratios = [a / b for a, b in zip(on, off)]
            worst = max(worst, statistics.median(ratios))
            print(f"{'Customer ' + name:<40}{statistics.median(off):>9.0f}"
                  f"{statistics.median(on):>9.0f}{statistics.median(ratios):>8.2f}  "
                  + " ".join(f"{r:.2f}" for r in ratios))
        print(f"(medians of {args.rounds} rounds of {args.count} requests each, CPU time of "
              f"this process; target: history on at most {TARGET}x off)")
        return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
