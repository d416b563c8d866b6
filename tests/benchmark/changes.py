"""Benchmark (issue 41, bulk writes): one change by filter of the benchmark's
980 bench customers (``PUT /rest/entities/Customer/search``, history, events
and substring search on) against the database alone doing the same UPDATE,
same run, same database.

    python tests/benchmark/changes.py [--rounds 10] [--text | --delete | --each]
                                      [--database-url URL]

Each round sets ``grade`` (``--text``: ``email``, a column the substring
search indexes) on every customer whose name starts with "Bench", in
process (no server, no sockets), the value changed each round; then the
same rows get the same change from one plain ``UPDATE`` (the rows only: no
history, no events, no version check). Printed: the medians of wall time
and of this process's CPU time, their ratio, and the statements one change
sent, per kind and table. ``--delete``: ``DELETE`` of the same rows
(Customer's soft delete: the rows marked), against one plain ``UPDATE``
marking them; the marks are taken off again between rounds, untimed.
``--each``: a bulk ``PUT /rest/entities/Customer`` of the same rows, each
row its own ``email``.
"""
import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bulk import counted                        # noqa: E402
from dataset import prepare                     # noqa: E402
from inprocess import _answer, _environs        # noqa: E402

PATH = "/rest/entities/Customer/search"
PREFIX = "Bench"


def body(column, round_number):
    value = (("BRONZE", "SILVER", "GOLD")[round_number % 3] if column == "grade"
             else f"changed{round_number}@example.com")
    return {"filter": {"conditions": [{"property": "name", "operator": "startsWith",
                                       "value": PREFIX}]},
            "values": {column: value}, "maxRows": 1000}


def _kind(sql):
    """(verb, table) of a statement: the first two words that say it."""
    words = sql.replace("(", " ").split()
    verb = words[0].upper() if words else ""
    if verb == "INSERT":
        return verb, words[2].strip('"')
    if verb == "UPDATE":
        return verb, words[1].strip('"')
    if verb == "SELECT" and "FROM" in (upper := [word.upper() for word in words]):
        return verb, words[upper.index("FROM") + 1].strip('"')
    return verb, ""


def _raw(app, column, value):
    """ms of the same change by one plain UPDATE in one transaction."""
    from restsvc.db import execute
    database = app.database
    param = database.param
    started = time.perf_counter()
    with database.atomic():
        execute(database, f'UPDATE "customer" SET "{column}" = {param} '
                f'WHERE "name" LIKE {param}', [value, PREFIX + "%"])
    return (time.perf_counter() - started) * 1e3


def _ids(app, token):
    """The ids of the rows the filter finds."""
    search = {"filter": body("grade", 0)["filter"], "fetchPlan": "_instance_name", "limit": 1000}
    payload = json.dumps(search).encode()
    status, answer = _answer(app, _environs("POST", [PATH], token, payload)[0], payload)
    return [row["id"] for row in json.loads(answer)]


def _unmark(app):
    """The deletion marks of ``--delete``'s rows taken off (untimed)."""
    from restsvc.db import execute
    database = app.database
    with database.atomic():
        execute(database, 'UPDATE "customer" SET "deletedDate" = NULL, "deletedBy" = NULL '
                f'WHERE "name" LIKE {database.param}', [PREFIX + "%"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--text", action="store_true",
                        help="change email (substring-indexed) instead of grade")
    parser.add_argument("--each", action="store_true",
                        help="a bulk PUT of the rows, each its own email")
    parser.add_argument("--delete", action="store_true",
                        help="delete the rows (soft delete) instead of changing them")
    parser.add_argument("--database-url", default=None,
                        help="PostgreSQL URL (a fresh database: its tables are replaced)")
    args = parser.parse_args()
    column = "deletedDate" if args.delete else "email" if args.text or args.each else "grade"
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, _ = prepare(Path(workdir), args.database_url)
        walls, cpus, raws, counts, changed = [], [], [], {}, 0
        ids = _ids(app, token) if args.each else []
        for round_number in range(args.rounds + 1):        # round 0: warm-up, counted
            payload = json.dumps([{"id": key, "email": f"r{round_number}-{n}@example.com"}
                                  for n, key in enumerate(ids)] if args.each
                                 else body(column, round_number)).encode()
            environ = _environs("DELETE" if args.delete else "PUT",
                                ["/rest/entities/Customer" if args.each else PATH], token, payload)[0]
            started, cpu = time.perf_counter(), time.process_time()
            if round_number == 0:
                status, answer, counts = counted(app, environ, payload, _kind)
            else:
                status, answer = _answer(app, environ, payload)
            wall, cpu = (time.perf_counter() - started) * 1e3, (time.process_time() - cpu) * 1e3
            if not status.startswith("200"):
                raise SystemExit(f"the change answered {status}: {answer[:300]!r}")
            changed = len(ids) if args.each else json.loads(answer)["count"]
            if args.delete:
                _unmark(app)
            if round_number:
                walls.append(wall)
                cpus.append(cpu)
                raw_value = "2026-01-01 00:00:00" if args.delete else \
                    body(column, round_number + 1)["values"][column]
                if column == "grade":
                    raw_value = raw_value[0]        # the stored enum id
                raws.append(_raw(app, column, raw_value))
                if args.delete:
                    _unmark(app)
        kind = "PostgreSQL" if args.database_url else "SQLite"
        wall, raw = statistics.median(walls), statistics.median(raws)
        change = "a delete by filter" if args.delete else "a bulk PUT" if args.each \
            else "a change by filter"
        print(f"{kind}, {change} of {changed} customers ({column}), {args.rounds} "
              "rounds (ms: median, range)")
        request = "DELETE .../search" if args.delete else "PUT .../Customer" if args.each \
            else "PUT .../search"
        print(f"  {request:<22}wall {wall:7.1f} ({min(walls):.1f}-{max(walls):.1f})"
              f"  CPU of this process {statistics.median(cpus):.1f} "
              f"({min(cpus):.1f}-{max(cpus):.1f}); {wall / changed * 1e3:.0f} µs per row")
        print(f"  {'one plain UPDATE':<22}wall {raw:7.1f} ({min(raws):.1f}-{max(raws):.1f})"
              f"  it / plain: {wall / raw:.1f}x")
        print("  statements of one change: " + ", ".join(
            f"{verb} {table} {n}".replace("  ", " ") for (verb, table), n in sorted(counts.items())))


if __name__ == "__main__":
    main()
