"""What an API key costs a request beside an access token, in process.

    python tests/benchmark/apikeys.py [--postgres URL] [--count 2000] [--rounds 6]

``GET /rest/entities/Customer/<id>`` (the ``get`` of run.py) with the
demo-client's access token and with an API key of the demo user ``admin``
(both system-full-access), CPU µs per request of this process, the two in
turns (ABBA) so the machine's load hits both alike. Twice: as served (the
gate keeps a caller for ``RECHECK_SECONDS``) and with ``RECHECK_SECONDS = 0``,
every request reading its token or key from the database (a key joins its
user's row). restsvc/docs/apikeys.md "What it costs".
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from dataset import prepare
from inprocess import ratio_row, repeat


def _key(app, token):
    from werkzeug.test import Client
    answer = Client(app).post("/rest/api-keys", json={"name": "bench", "username": "admin"},
                              headers={"Authorization": f"Bearer {token}"})
    if answer.status_code != 201:
        raise SystemExit(f"POST /rest/api-keys answered {answer.status_code}: {answer.text}")
    return answer.json["key"]


def measure(app, callers, paths, count, rounds):
    """{label: [CPU µs per request, one per round]}, the callers in turns."""
    for token in callers.values():          # warm-up: plans, permissions, SQL text
        repeat(app, "GET", paths, token, None, max(50, count // 10))
    costs = {label: [] for label in callers}
    labels = list(callers)
    for number in range(rounds):
        for label in labels[::-1] if number % 2 else labels:
            costs[label].append(repeat(app, "GET", paths, callers[label], None, count)[1])
    return costs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="a PostgreSQL URL instead of a SQLite file")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    from restsvc.security import gate
    workdir = Path(tempfile.mkdtemp(prefix="restsvc-apikeys-"))
    try:
        app, _, token, ids = prepare(workdir, args.postgres)
        callers = {"access token": token, "API key": _key(app, token)}
        paths = [f"/rest/entities/Customer/{customer}" for customer in ids[:200]]
        print(f"{'CPU µs per get':<40}{'access token':>14}{'API key':>10}{'ratio':>8}")
        for label, recheck in (("as served", gate.RECHECK_SECONDS), ("every request reads it", 0)):
            gate.RECHECK_SECONDS = recheck
            costs = measure(app, callers, paths, args.count, args.rounds)
            print(ratio_row(label, 40, costs, "access token", "API key"), flush=True)
        print(f"(medians of {args.rounds} rounds of {args.count} requests; "
              f"{'PostgreSQL' if args.postgres else 'SQLite'})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
