"""CPU instructions per request, restsvc and baseline, counted by valgrind (callgrind).

    python tests/benchmark/instructions.py [--only get] [--requests 1000] [--postgres URL]
    python tests/benchmark/instructions.py --bulk [--requests 2]
    python tests/benchmark/instructions.py --cache [--only list] [--requests 200]

Timings on a shared machine move with its load; instruction counts do not.
For each app and operation the script runs a process that answers N and then
N + ``--requests`` requests in process under ``valgrind --tool=callgrind``
and divides the difference by ``--requests`` (start-up cancels out), the
heap frozen after start as a served worker's is (``inprocess.as_served``). Needs
valgrind (``apt-get install valgrind``); slow: about a minute per figure.
With ``--postgres URL`` restsvc runs on PostgreSQL (a schema of its own,
dropped afterwards; the baseline stays on SQLite, as ``run.py --postgres``):
only restsvc's process is counted, not the server's.

``--cache``: also what the same instructions cost beyond their number, as
callgrind simulates this machine's caches and branch predictor (``--cache-sim``,
``--branch-sim``; about three times slower): first-level data cache misses
(reads and writes) and mispredicted branches (conditional and indirect) per
request. Two apps that run as many instructions can still take different
times; these say where.

``--bulk`` (issue 41, SQLite): instead, per 1,000-row bulk POST of new demo
customers (``bulk.py``'s), restsvc's instructions against those of the raw
``executemany`` of the same rows into the plain copy (``bulk.py``'s target
of at most 6x, counted rather than timed). Each process makes all of its
bodies or rows first, so making them cancels out.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE_REQUESTS = 50
BULK_ROWS = 1000


def serve(workdir, app_name, operation, count):
    """In the measured process: answer ``count`` requests of ``operation``."""
    from dataset import REPO  # noqa: F401  (puts this checkout on sys.path)
    from inprocess import as_served, repeat
    from run import BODY, OPERATIONS
    state = json.loads((workdir / "state.json").read_text())
    os.environ.update(state["env"])
    if app_name == "restsvc":
        from restsvc.app import RestApp
        from restsvc.settings import load_settings
        app = RestApp(load_settings(environ=state["env"]))
    else:
        os.environ["BASELINE_DATABASE"] = str(workdir / "baseline.db")
        os.environ["BASELINE_SECRET_KEY"] = state["env"]["RESTSVC_SECRET_KEY"]
        from baseline import app
    as_served(app, slowed=True)
    method, path, first = OPERATIONS[operation]
    paths = [(first or path).format(id=i) for i in state["ids"]] if first else [path]
    repeat(app, method, paths, state["token"], BODY if method == "POST" else None, count)


def serve_bulk(workdir, app_name, count):
    """In the measured process: ``count`` of the bulks ``state.json`` says to
    make, as restsvc's POSTs or (``raw``) the raw executemany of their rows."""
    from dataset import REPO  # noqa: F401  (puts this checkout on sys.path)
    from bulk import customers, raw_rows, raw_write
    from inprocess import _answer, _environs, as_served
    from restsvc.app import RestApp
    from restsvc.settings import load_settings
    state = json.loads((workdir / "state.json").read_text())
    os.environ.update(state["env"])
    app = as_served(RestApp(load_settings(environ=state["env"])), slowed=True)
    tags = [f"{os.getpid():07d}{n}" for n in range(state["bulks"])]   # new emails in every process
    if app_name == "raw":
        for sql, values in [raw_rows(app, "raw_customer", BULK_ROWS, tag) for tag in tags][:count]:
            raw_write(app, sql, values)
        return
    bodies = [json.dumps(customers(BULK_ROWS, tag)).encode() for tag in tags]
    environs = [_environs("POST", ["/rest/entities/Customer"], state["token"], body)[0]
                for body in bodies]
    for environ, body in list(zip(environs, bodies))[:count]:
        status, payload = _answer(app, environ, body)
        if not status.startswith("201"):
            raise SystemExit(f"bulk create answered {status}: {payload[:300]!r}")


EVENTS = {"instructions": ("Ir",), "data cache misses": ("D1mr", "D1mw"),
          "mispredicted branches": ("Bcm", "Bim")}


def instructions(workdir, app_name, operation, count, cache=False):
    """Callgrind's counts of a process that answers ``count`` requests:
    {what (EVENTS): count}; only the instructions without ``cache``."""
    out = workdir / f"callgrind.{app_name}.{operation}.{count}"
    simulated = ["--cache-sim=yes", "--branch-sim=yes"] if cache else []
    subprocess.run(["valgrind", "--tool=callgrind", *simulated, f"--callgrind-out-file={out}",
                    sys.executable, __file__, "--serve", str(workdir), app_name, operation,
                    str(count)], check=True, capture_output=True, cwd=HERE)
    text = out.read_text()
    names = re.search(r"^events:\s*(.*)$", text, re.MULTILINE).group(1).split()
    counts = dict(zip(names, map(int, re.search(r"^summary:\s*(.*)$", text,
                                                 re.MULTILINE).group(1).split())))
    return {what: sum(counts[name] for name in events) for what, events in EVENTS.items()
            if all(name in counts for name in events)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append")
    parser.add_argument("--requests", type=int,
                        help="requests counted per figure (default 1000; --bulk: bulks, default 2)")
    parser.add_argument("--postgres", metavar="URL",
                        help="restsvc on this PostgreSQL database (a schema of its own)")
    parser.add_argument("--cache", action="store_true",
                        help="also data cache misses and mispredicted branches (simulated)")
    parser.add_argument("--bulk", action="store_true",
                        help="instead: a 1,000-row bulk POST against the raw executemany (SQLite)")
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        workdir, app_name, operation, count = args.serve
        if operation == "bulk":
            return serve_bulk(Path(workdir), app_name, int(count))
        return serve(Path(workdir), app_name, operation, int(count))
    if not shutil.which("valgrind"):
        print("valgrind is not installed: apt-get install -y valgrind", file=sys.stderr)
        return 2
    if args.bulk:
        return _bulk(args.requests or 2)
    from baseline_data import build
    from dataset import prepare, scratch, share_token, tag_shape
    from run import OPERATIONS
    requests = args.requests or 1000
    with scratch("restsvc-instructions-") as (workdir, cleanups):
        app, env, token, ids = prepare(workdir)
        if args.postgres:   # the same data on PostgreSQL; the baseline stays on SQLite
            from growth import postgres_schema
            url, drop_schema = postgres_schema(args.postgres)
            cleanups.append(drop_schema)
            app, env, token, _ = prepare(workdir, url, env["RESTSVC_SECRET_KEY"])
            cleanups.insert(0, app.database.close_all)
        build(workdir / "restsvc.db", workdir / "baseline.db", tag_shape(app, token))
        if args.postgres:
            share_token(app, token, workdir / "baseline.db")
        (workdir / "state.json").write_text(json.dumps({"env": env, "token": token, "ids": ids}))
        print(f"{'per request':<48}{'restsvc':>12}{'baseline':>12}{'ratio':>8}")
        for operation in args.only or OPERATIONS:
            figures = []
            for app_name in ("restsvc", "baseline"):
                low = instructions(workdir, app_name, operation, BASE_REQUESTS, args.cache)
                high = instructions(workdir, app_name, operation, BASE_REQUESTS + requests,
                                    args.cache)
                figures.append({what: (high[what] - low[what]) / requests for what in high})
            for what, ours in figures[0].items():
                theirs = figures[1][what]
                print(f"{f'{operation}: {what}':<48}{ours:>12,.0f}{theirs:>12,.0f}"
                      f"{ours / theirs:>8.2f}", flush=True)
    return 0


def _bulk(bulks):
    """``--bulk``: instructions per bulk, restsvc's POST and the raw write, and their ratio."""
    from bulk import TARGET_RATIO, raw_tables
    from dataset import prepare, scratch
    with scratch("restsvc-instructions-") as (workdir, _):
        app, env, token, _ = prepare(workdir)
        raw_tables(app)
        (workdir / "state.json").write_text(json.dumps({"env": env, "token": token,
                                                        "bulks": 1 + bulks}))
        counted = "instructions"
        figures = [(instructions(workdir, name, "bulk", 1 + bulks)[counted]
                    - instructions(workdir, name, "bulk", 1)[counted]) / bulks
                   for name in ("restsvc", "raw")]
    print(f"instructions per bulk of {BULK_ROWS:,} customers (SQLite, {bulks} bulks): "
          f"POST {figures[0]:,.0f}, raw executemany {figures[1]:,.0f}, "
          f"{figures[0] / figures[1]:.2f}x (target: at most {TARGET_RATIO:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
