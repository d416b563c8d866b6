"""Benchmark (issue 20): create and update with entity history on against
the same entity without it, in process, same run.

    python tests/benchmark/history.py [--count 600] [--block 20] [--rounds 7] [--database-url URL]

``POST /rest/entities/Customer`` and ``PUT /rest/entities/Customer/<id>``
(a new name each time, so every update is recorded) take turns with history
on (the demo's declaration: one HistoryItem per write, the row's values read
before an update) and off (the same entity with its history switched off in
the metadata), in blocks of ``--block`` requests, so both ways see the same
machine. Target: with history, each costs at most 1.25x without (CPU time
per request, median of the per-round ratios; their range is printed too).
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

TARGET = 1.25


def _bodies(method, paths, token, count):
    """``count`` requests (environ, body), each with a new name."""
    bodies = [json.dumps({"name": f"bench {time.monotonic_ns()} {i}"}).encode()
              for i in range(count)]
    return [(_environs(method, [paths[i % len(paths)]], token, bodies[i])[0], bodies[i])
            for i in range(count)]


def _round(app, meta, recorded, token, method, paths, count, block):
    """CPU µs per request (off, on) of ``count`` writes each way, in blocks of
    ``block`` requests taking turns: whatever else the machine does in the
    round falls on both alike."""
    spent = {False: 0.0, True: 0.0}
    requests = _bodies(method, paths, token, 2 * count)
    for start in range(0, 2 * count, 2 * block):
        for on in ((False, True) if start // (2 * block) % 2 else (True, False)):
            meta.history = recorded if on else None
            chunk = requests[start + on * block:start + (on + 1) * block]
            cpu = time.process_time()
            for environ, body in chunk:
                status, payload = _answer(app, environ, body)
                if not status.startswith(("200", "201")):
                    raise SystemExit(f"{method} answered {status}: {payload[:200]!r}")
            spent[on] += time.process_time() - cpu
    meta.history = recorded
    return spent[False] / count * 1e6, spent[True] / count * 1e6


def main():
    parser = arguments(__doc__, 600, 7)
    parser.add_argument("--block", type=int, default=20, help="requests in one turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, ids = prepare(Path(workdir), args.database_url)
        meta = app.metadata.entity("Customer")
        recorded = meta.history
        updates = [f"/rest/entities/Customer/{key}" for key in ids[:200]]
        operations = {"create": ("POST", ["/rest/entities/Customer"]), "update": ("PUT", updates)}
        costs = {name: [] for name in operations}
        for round_number in range(args.rounds + 1):       # round 0 warms up
            for name, (method, paths) in operations.items():
                spent = _round(app, meta, recorded, token, method, paths, args.count, args.block)
                if round_number:
                    costs[name].append(spent)
        print(f"\n{'operation (in process)':<24}{'off µs':>8}{'on µs':>8}{'ratio':>7}"
              f"{'min-max':>12}  per round")
        worst = 0
        for name in operations:
            off = [o for o, _ in costs[name]]
            on = [o for _, o in costs[name]]
            ratios = sorted(b / a for a, b in costs[name])
            worst = max(worst, statistics.median(ratios))
            print(f"{'Customer ' + name:<24}{statistics.median(off):>8.0f}"
                  f"{statistics.median(on):>8.0f}{statistics.median(ratios):>7.2f}"
                  f"{ratios[0]:>6.2f}-{ratios[-1]:.2f}  "
                  + " ".join(f"{b / a:.2f}" for a, b in costs[name]))
        print(f"(medians of {args.rounds} rounds of {args.count} requests each way, taking turns "
              f"every {args.block}; CPU time of this process; target: history on at most "
              f"{TARGET}x off)")
        return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
