"""Benchmark (issue 21): create with change events on against the same
entity without them, in process, same run.

    python tests/benchmark/events.py [--count 300] [--rounds 5] [--database-url URL] [--update]

``POST /rest/entities/Customer`` (a new customer each time) takes turns with
events on (the demo's declaration: one outbox row per write, in the write's
transaction) and off (the same entity with ``events`` switched off in the
metadata), once with the entity's history switched off (events alone: a lone
INSERT against INSERT + event in one transaction) and once with the demo's
history on. Target: with events, a create costs at most 1.2x without (CPU
time and wall time per request, medians of the per-round ratios).
``--update``: ``PUT`` of an existing customer's name instead (its event
keeps the name before: with history off, one read of the row before).
"""
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import arguments, prepare                     # noqa: E402
from inprocess import _answer, _environs        # noqa: E402

TARGET = 1.2


def _creates(app, token, count, ids=None):
    """(CPU µs, wall µs) per request of ``count`` creates (``ids``: updates of them)."""
    bodies = [json.dumps({"name": f"bench {time.monotonic_ns()} {i}"}).encode()
              for i in range(count)]
    paths = ([f"/rest/entities/Customer/{ids[i % len(ids)]}" for i in range(count)] if ids
             else ["/rest/entities/Customer"] * count)
    environs = [_environs("PUT" if ids else "POST", [path], token, body)[0]
                for path, body in zip(paths, bodies)]
    cpu, wall = time.process_time(), time.perf_counter()
    for environ, body in zip(environs, bodies):
        status, payload = _answer(app, environ, body)
        if not status.startswith("200" if ids else "201"):
            raise SystemExit(f"POST answered {status}: {payload[:200]!r}")
    return ((time.process_time() - cpu) / count * 1e6,
            (time.perf_counter() - wall) / count * 1e6)


def main():
    parser = arguments(__doc__, 300, 5)
    parser.add_argument("--update", action="store_true", help="PUT a name instead of POST")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, ids = prepare(Path(workdir), args.database_url)
        ids = ids if args.update else None
        meta = app.metadata.entity("Customer")
        recorded = meta.history
        cases = ("history off", "history on")
        costs = {(case, on): [] for case in cases for on in (False, True)}
        for round_number in range(args.rounds + 1):       # round 0 warms up
            for case in cases:
                meta.history = recorded if case == "history on" else None
                for on in ((False, True) if round_number % 2 else (True, False)):
                    meta.events = on
                    spent = _creates(app, token, args.count, ids)
                    if round_number:
                        costs[case, on].append(spent)
        meta.history, meta.events = recorded, True
        print(f"\n{('update' if ids else 'create') + ' Customer (in process)':<30}{'off µs':>9}{'on µs':>9}{'ratio':>8}"
              f"  per round")
        worst = 0
        for case in cases:
            for index, clock in enumerate(("CPU", "wall")):
                off = [spent[index] for spent in costs[case, False]]
                on = [spent[index] for spent in costs[case, True]]
                ratios = [a / b for a, b in zip(on, off)]
                worst = max(worst, statistics.median(ratios))
                print(f"{case + ', ' + clock:<30}{statistics.median(off):>9.0f}"
                      f"{statistics.median(on):>9.0f}{statistics.median(ratios):>8.2f}  "
                      + " ".join(f"{r:.2f}" for r in ratios))
        print(f"(medians of {args.rounds} rounds of {args.count} requests each; "
              f"target: events on at most {TARGET}x off)")
        return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
