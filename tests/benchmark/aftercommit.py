"""Benchmark (issue 40): after-commit hooks, how many events one runner
(restsvc/events/aftercommit.py, a thread of ``restsvc deliver``) runs per
second, in process.

    python tests/benchmark/aftercommit.py [--count 500] [--rounds 3] [--database-url URL]

The demo's ``Customer`` (``events=True``) is given an ``after_commit`` hook;
``count`` customers are created through a service's ``DataAccess``, then the
runner's passes are timed until it has run every event. Two hooks: one that
does nothing (the runner's own cost per event: the event read, the
position's UPDATE and its commit) and one that saves a ``Tag`` through its
``data`` (a write through the write path joining that commit). CPU and
wall time per event, medians of the rounds.
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import arguments, prepare                     # noqa: E402


def _nothing(cls, event, data):
    pass


def _one_write(cls, event, data):
    data.save("Tag", {"name": f"after-commit {event['id']}"})


def _round(app, runner, data, count):
    """(CPU µs, wall µs) per event of running ``count`` new events."""
    for n in range(count):
        data.save("Customer", {"name": f"bench {time.monotonic_ns()} {n}"})
    cpu, wall = time.process_time(), time.perf_counter()
    while runner.step():
        pass
    return ((time.process_time() - cpu) / count * 1e6,
            (time.perf_counter() - wall) / count * 1e6)


def main():
    from restsvc.clibase import service_access
    from restsvc.data.bound import DataAccess
    from restsvc.events.aftercommit import AfterCommit

    parser = arguments(__doc__, 500, 3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, _, _ = prepare(Path(workdir), args.database_url)
        model = app.metadata.entity("Customer").model
        access = service_access(app, None)
        data = DataAccess(app.data, access)
        for name, hook in (("does nothing", _nothing), ("saves a Tag", _one_write)):
            model.after_commit = classmethod(hook)
            runner = AfterCommit(app.settings, app.data, access)
            runner.step()           # registers the hook's position
            costs = [_round(app, runner, data, args.count) for _ in range(args.rounds)]
            cpu = statistics.median(cost[0] for cost in costs)
            wall = statistics.median(cost[1] for cost in costs)
            print(f"hook that {name}: {cpu:.0f} µs CPU, {wall:.0f} µs wall per event "
                  f"({1e6 / wall:.0f} events/s)")
        del model.after_commit


if __name__ == "__main__":
    main()
