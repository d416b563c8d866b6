"""Benchmark (issues 10, 26): restsvc against an honest stdlib WSGI baseline, same run, same bytes.

    python tests/benchmark/run.py [--rounds 5] [--duration 5] [--only list|get|create|nested|search]
    python tests/benchmark/run.py --no-wrk           # in-process figures only
    python tests/benchmark/run.py --no-wrk --cold 4096   # in process, caches evicted per request
    python tests/benchmark/run.py --postgres URL     # restsvc and the baseline on PostgreSQL
    python tests/benchmark/run.py --profile 3000 [--only get]     # in-process cProfile
    python tests/benchmark/run.py --app-cpu          # also the CPU inside each app, served
    python tests/benchmark/run.py --in-process 2000    # service call vs load by id, µs/request

restsvc works on a SQLite database prepared by its own code (demo data plus
generated customers up to 1,000); the baseline (``baseline.py``) on a database
of its own filled from it once (``baseline_data.py``), every value stored in
the form the answer writes. Both at the same durability (WAL,
synchronous=FULL), with the same indexes, with a bearer token from restsvc's
token endpoint: its HMAC on every request, its row read at most every 0.5 s
(restsvc's gate rule, in both). First each operation is answered once by both
apps in process and the bodies and headers are compared byte for byte (a
create's new id and times, and each answer's ``X-Request-Id``, aside). Then, per operation:

- in process: both WSGI callables called directly, taking turns per round;
  CPU µs per request of this process (and wall µs), median (min-max) over the
  rounds and the median of the per-round ratios restsvc/baseline (targets:
  get <= 1.5, list <= 1.2);
- wrk: both under gunicorn with 2 sync workers on loopback ports, wrk -t2 -c16,
  taking turns per round; req/s, and the CPU time (user + system, from /proc)
  of each app's gunicorn workers per answered request, median (min-max) and the
  median of the per-round ratios (targets: 1.15, a create 1.25; on PostgreSQL
  1.2, a create 1.3). The CPU
  time is the robust figure on a shared machine; req/s moves with the load.

``--postgres URL``: restsvc on a schema of its own in that database, the
baseline (``baseline_pg.py``) on another, filled from restsvc's once
(``baseline_data.build_postgres``); under wrk, PostgreSQL's own CPU time (its
backends serving each app's connections, found by ``application_name`` in
``pg_stat_activity``, read from ``/proc``) is counted per request beside the
server's. Both customer tables are analyzed before each operation: the
creates add thousands of rows, and a search planned from statistics taken
before them (autovacuum's timing decides) can walk the whole primary key.

``--cold KIB`` (with ``--no-wrk``): in process, each request after the CPU's
caches are evicted (``inprocess.evicting``: KIB KiB of memory written; the
time it takes is not counted), as a served worker's request follows the
kernel's and gunicorn's work: 4096 puts both apps near what ``--app-cpu``
counts inside them under wrk, without the server's noise (tests/benchmark/README.md,
"Cold caches (issue 41, nineteenth session)").

``--app-cpu``: both apps served through ``apptime.py``, which counts the CPU
time spent inside each app (not gunicorn's) per request; printed beside the
server's (tests/benchmark/README.md, "Inside the server (issue 41, seventh session)").
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from baseline_data import build, build_postgres
from dataset import REPO, prepare, tag_shape
from inprocess import compare, evicting, one_response, summary
from apptime import totals
from servers import (Wrk, backends_cpu, cpu_between, one_request, start_server, stop_server,
                     workers_cpu)

HERE = Path(__file__).resolve().parent
# Server CPU per request under wrk, restsvc / baseline, by operation (issue 41:
# a create at most 1.25 on SQLite; on PostgreSQL 1.2, a create 1.3).
CPU_TARGETS = {"sqlite": {"create": 1.25}, "postgres": {"create": 1.3}}
CPU_TARGET = {"sqlite": 1.15, "postgres": 1.2}      # every other operation
IN_PROCESS_TARGETS = {"get": 1.5, "list": 1.2}   # CPU µs in process, restsvc / baseline
BODY = '{"name":"x","email":"y","grade":"GOLD"}'
APPLICATION_NAMES = {"restsvc": "restsvc-bench", "baseline": "restsvc-baseline"}  # on PostgreSQL
SEARCH = '{"conditions":[{"property":"name","operator":"startsWith","value":"bench customer 012"}]}'
OPERATIONS = {  # name -> (method, path as wrk sees it, the first request's path)
    "list": ("GET", "/rest/entities/Customer?limit=50", None),
    "get": ("GET", "/rest/entities/Customer/<id>", "/rest/entities/Customer/{id}"),
    "create": ("POST", "/rest/entities/Customer?responseFetchPlan=_base", None),
    "nested": ("GET", "/rest/entities/Order?limit=50&fetchPlan=order-with-details", None),
    "search": ("GET", f"/rest/entities/Customer/search?limit=50&filter={quote(SEARCH)}", None),
}
GET_LUA = """local ids = {%s}
local threads = 0
function setup(thread) threads = threads + 1; thread:set("start", threads * 397) end
function init(args) i = start end
function request()
  i = i %% #ids + 1
  return wrk.format(nil, "/rest/entities/Customer/" .. ids[i])
end
"""
POST_LUA = f"""wrk.method = "POST"
wrk.body = '{BODY}'
wrk.headers["Content-Type"] = "application/json"
"""
WRK_MISSING = """wrk is not installed; the benchmark drives both servers with it.
Install it from the system packages:  sudo apt-get install -y wrk   (Debian/Ubuntu)
or see https://github.com/wg/wrk, then run this script again."""


def check(server, operation, wrk, first_id, args):
    """One request, then the warm-up: (JSON answer, None) or (None, why there is no figure)."""
    name, _, base_url = server
    method, path, first_path = operation
    status, body = one_request(base_url + (first_path or path).format(id=first_id), method,
                               wrk.token, BODY if method == "POST" else None)
    if not 200 <= status < 300:
        hint = " (is this endpoint on this branch yet?)" if status in (404, 405) else ""
        return None, f"{name} {method} {path}: answered {status}{hint} {json.dumps(body)[:200]}"
    try:
        wrk.rate(base_url, path, args.warmup)
    except RuntimeError as exc:
        return None, f"{name} {method} {path}: warm-up: {exc}"
    return body, None


def measure(servers, path, wrk, args, monitor=None):
    """{name: [(req/s, server CPU µs per request, PostgreSQL CPU µs per request or None,
    CPU µs inside the app per request or None) per round]}. The servers take turns
    (ABBA...), so a change in the machine's load hits both alike; ratios are taken per
    round. The CPU time is that of the gunicorn workers (from /proc), divided by the
    requests wrk saw answered: the robust figure on a shared machine. ``monitor``: a
    connection to PostgreSQL, to count its backends' CPU too."""
    figures = {name: [] for name, _, _ in servers}
    for round_number in range(args.rounds):
        for name, proc, base_url in servers[::-1] if round_number % 2 else servers:
            backends = monitor and backends_cpu(monitor, APPLICATION_NAMES[name])
            counted = args.apptime_dir and totals(args.apptime_dir / name)
            before = workers_cpu(proc)
            rate, count = wrk.run(base_url, path, args.duration)
            cpu = (workers_cpu(proc) - before) / count * 1e6
            database = monitor and cpu_between(
                backends, backends_cpu(monitor, APPLICATION_NAMES[name])) / count * 1e6
            inside = None
            if counted:
                requests, seconds = (b - a for a, b in zip(counted, totals(args.apptime_dir / name)))
                inside = seconds / requests * 1e6
            figures[name].append((rate, cpu, database, inside))
    return figures


def same_bytes(name, ours, theirs):
    """None, or where the two bodies differ (a create differs in its new id and time only)."""
    if name == "create":
        parsed, other = (json.loads(body) for body in (ours, theirs))
        new = dict.fromkeys(("id", "createdDate", "lastModifiedDate"))
        if list(parsed) == list(other) and {**parsed, **new} == {**other, **new}:
            return None
    elif ours == theirs:
        return None
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
              min(len(ours), len(theirs)))
    return f"restsvc  ...{ours[max(0, at - 60):at + 60]}\n      baseline ...{theirs[max(0, at - 60):at + 60]}"


def same_headers(name, ours, theirs):
    """None, or the headers the two answers do not share. ``X-Request-Id`` is
    new on every answer, a create's ``Location`` and ``ETag`` name its new
    id, and its ``Content-Length`` counts its times (a fraction's trailing zeros
    are not written): those are compared by presence."""
    ours, theirs = dict(ours), dict(theirs)
    fresh = {"X-Request-Id", *(("Location", "ETag", "Content-Length") if name == "create" else ())}
    for headers in (ours, theirs):
        headers.update((header, "(present)") for header in fresh if header in headers)
    differing = sorted(header for header in {*ours, *theirs} if ours.get(header) != theirs.get(header))
    return ", ".join(f"{header}: restsvc {ours.get(header)!r}, baseline {theirs.get(header)!r}"
                     for header in differing) or None


def in_process(apps, token, ids, args):
    """Rows (name, restsvc µs per round, baseline µs per round) and notes."""
    rows, notes = [], []
    for name in args.only or OPERATIONS:
        method, path, first = OPERATIONS[name]
        paths = [(first or path).format(id=i) for i in ids] if first else [path]
        body = BODY if method == "POST" else None
        answers = {app_name: one_response(app, method, paths[0], token, body)
                   for app_name, app in apps.items()}
        bad = [f"{n} answered {st}: {p[:200]!r}" for n, (st, _, p) in answers.items()
               if not st.startswith("2")]
        if bad:
            notes += [f"{name}: {b}" for b in bad]
            continue
        (_, ours, body_ours), (_, theirs, body_theirs) = answers["restsvc"], answers["baseline"]
        if difference := same_bytes(name, body_ours, body_theirs):
            notes.append(f"{name}: the answers differ:\n      {difference}")
        if difference := same_headers(name, ours, theirs):
            notes.append(f"{name}: the headers differ: {difference}")
        figures = compare(apps, method, paths, token, body, args.rounds, args.seconds,
                          evicting(args.cold) if args.cold else None)
        rows.append((name, figures["restsvc"], figures["baseline"]))
    return rows, notes


def report_in_process(rows, notes, args):
    print(f"\n{'in process':<10}{'CPU µs restsvc':>17}{'baseline':>15}{'ratio':>6}{'target':>8}"
          f"{'wall µs restsvc':>17}{'baseline':>15}{'ratio':>6}  CPU ratio per round")
    for name, ours, theirs in rows:
        cpu = [a[1] / b[1] for a, b in zip(ours, theirs)]
        ratio, target = statistics.median(cpu), IN_PROCESS_TARGETS.get(name)
        wall = statistics.median(a[0] / b[0] for a, b in zip(ours, theirs))
        print(f"{name:<10}{summary([a[1] for a in ours]):>17}{summary([b[1] for b in theirs]):>15}"
              f"{ratio:>6.2f}{f'<={target}' if target else '':>8}"
              f"{summary([a[0] for a in ours]):>17}{summary([b[0] for b in theirs]):>15}"
              f"{wall:>6.2f}  {' '.join(f'{r:.2f}' for r in cpu)}"
              f"{'  above target' if target and ratio > target else ''}")
    cold = f"; {args.cold} KiB written before each request, not counted" if args.cold else ""
    footer(f"restsvc/baseline; median (min-max) of {args.rounds} rounds of ~{args.seconds}s per "
           f"app, taking turns; CPU time of this process per request{cold}", notes)


def footer(what, notes):
    """How the figures were taken, with the machine's load, and the notes."""
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"({what}; {os.cpu_count()} CPUs, load average {load})")
    for note in notes:
        print(f"  note: {note}")


def benchmark(args, workdir, token, ids, servers, monitor=None):
    """Rows (label, restsvc rates, baseline rates) and notes on what could not be measured."""
    (workdir / "get.lua").write_text(GET_LUA % ", ".join(f'"{i}"' for i in ids))
    (workdir / "post.lua").write_text(POST_LUA)
    wrk = Wrk(token, {OPERATIONS["get"][1]: workdir / "get.lua",
                      OPERATIONS["create"][1]: workdir / "post.lua"})
    operations = {name: OPERATIONS[name] for name in args.only or OPERATIONS}
    if args.probe_path:  # restsvc alone, on a path that exists before the entities API
        operations, servers = {"probe": ("GET", args.probe_path, None)}, servers[:1]
    rows, notes = [], []
    for name, operation in operations.items():
        if monitor:     # both planned from statistics that count the rows creates added
            monitor.cursor().execute("ANALYZE " + ", ".join(args.analyzed))
        checked = [check(server, operation, wrk, ids[0], args) for server in servers]
        notes += [note for _, note in checked if note]
        live = [server for server, (_, note) in zip(servers, checked) if not note]
        label, rates = f"{name}: {operation[0]} {operation[1][:36]}", {}
        try:
            rates = measure(live, operation[1], wrk, args, monitor)
        except RuntimeError as exc:
            notes.append(f"{label}: {exc}")
        rows.append((label, rates.get("restsvc"), rates.get("baseline")))
    return rows, notes


def report(rows, notes, args):
    rounds = args.rounds > 1
    print(f"\n{'wrk':<50}{'req/s':>15}{'ratio':>7}  {'server CPU µs/request':<34}{'ratio':>6}"
          f"{'target':>8}{'  CPU ratio per round' if rounds else ''}")
    for label, ours, theirs in rows:
        if not ours or not theirs:     # --probe-path: restsvc alone
            print(f"{label:<50}{statistics.median(a[0] for a in ours) if ours else 'n/a':>15}"
                  f"{'':>7}  {summary([a[1] for a in ours]) if ours else ''}")
            continue
        rates = statistics.median(a[0] / b[0] for a, b in zip(ours, theirs))
        cpu = [a[1] / b[1] for a, b in zip(ours, theirs)]
        ratio = statistics.median(cpu)
        kind = "postgres" if args.postgres else "sqlite"
        target = CPU_TARGETS[kind].get(label.split(":")[0], CPU_TARGET[kind])
        cpus = f"{summary([a[1] for a in ours])} / {summary([b[1] for b in theirs])}"
        print(f"{label:<50}{statistics.median(a[0] for a in ours):>7.0f}/"
              f"{statistics.median(b[0] for b in theirs):<7.0f}{rates:>7.2f}  {cpus:<34}"
              f"{ratio:>6.2f}{f'<={target}':>8}"
              f"{'  ' + ' '.join(f'{r:.2f}' for r in cpu) if rounds else ''}"
              f"{'  above target' if ratio > target else ''}")
    footer(f"restsvc/baseline; medians (min-max) of {args.rounds} round(s) of wrk -t2 -c16 "
           f"-d{args.duration}s after a {args.warmup}s warm-up, taking turns; server CPU: "
           f"user+system time of the gunicorn workers per answered request", notes)
    report_database(rows, args)
    report_app(rows, args)
    return 0 if all(ours and (theirs or args.probe_path) for _, ours, theirs in rows) else 1


def report_database(rows, args):
    """PostgreSQL's own CPU per request, and the ratio of server and PostgreSQL together."""
    _two_figures(rows, 2, "PostgreSQL backends",
                 ("PostgreSQL CPU µs/request", lambda one: one[2]),
                 ("server + PostgreSQL CPU µs/request", lambda one: one[1] + one[2]),
                 f"restsvc/baseline; user+system time of the PostgreSQL backends serving each "
                 f"app's connections (application_name {', '.join(APPLICATION_NAMES.values())}), "
                 f"per answered request, {args.rounds} round(s)")


def report_app(rows, args):
    """CPU inside each app per request under the server, beside the server's (``--app-cpu``)."""
    _two_figures(rows, 3, "inside the app (--app-cpu)",
                 ("app CPU µs/request", lambda one: one[3]),
                 ("the rest of the server CPU µs/request", lambda one: one[1] - one[3]),
                 f"restsvc/baseline; thread CPU time inside each app's WSGI call and body "
                 f"(apptime.py), and the workers' CPU time less that, per request, "
                 f"{args.rounds} round(s)")


def _two_figures(rows, present, heading, first, second, what):
    """A table of two figures per operation (each ``(title, figure of a round)``),
    restsvc / baseline with the median of the per-round ratios, for the rows whose
    rounds hold field ``present``."""
    rows = [(label, ours, theirs) for label, ours, theirs in rows
            if ours and theirs and ours[0][present] is not None]
    if not rows:
        return
    print(f"\n{heading:<50}{first[0]:<38}{'ratio':>6}  {second[0]:<38}{'ratio':>6}")
    for label, ours, theirs in rows:
        cells = []
        for _, figure in (first, second):
            pair = f"{summary([figure(a) for a in ours])} / {summary([figure(b) for b in theirs])}"
            ratio = statistics.median(figure(a) / figure(b) for a, b in zip(ours, theirs))
            cells.append(f"{pair:<38}{ratio:>6.2f}")
        print(f"{label:<50}{'  '.join(cells)}")
    footer(what, [])


def bounded(low, high):
    def parse(text):
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value
    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=bounded(1, 120), default=5,
                        help="seconds per wrk run")
    parser.add_argument("--seconds", type=float, default=0.5,
                        help="seconds per app and round in process")
    parser.add_argument("--no-wrk", action="store_true", help="in-process figures only")
    parser.add_argument("--cold", type=bounded(1, 1 << 20), metavar="KIB",
                        help="in process, evict the caches before each request by writing "
                             "KIB KiB (4096: as under gunicorn); that time is not counted")
    parser.add_argument("--postgres", metavar="URL",
                        help="restsvc on this PostgreSQL database (a schema of its own, "
                             "dropped afterwards), the baseline on another schema of it "
                             "(baseline_pg.py); PostgreSQL's own CPU counted per app")
    parser.add_argument("--warmup", type=bounded(1, 30), default=2, help="warm-up seconds")
    parser.add_argument("--rounds", type=bounded(1, 15), default=5,
                        help="runs per server and operation, taking turns; medians are shown")
    parser.add_argument("--only", choices=tuple(OPERATIONS), action="append",
                        help="measure only this operation (repeatable)")
    parser.add_argument("--keep", action="store_true",
                        help="leave both servers running afterwards until Ctrl-C")
    parser.add_argument("--profile", type=bounded(1, 100000), metavar="N",
                        help="instead: profile N in-process requests per operation")
    parser.add_argument("--in-process", type=bounded(1, 100000), metavar="N",
                        help="instead: CPU µs per request in process, N requests per round, "
                             "GET /rest/services/orderService/calculateTotal against a load by id")
    parser.add_argument("--app-cpu", action="store_true",
                        help="also count the CPU time spent inside each app under the "
                             "server (apptime.py)")
    parser.add_argument("--probe-path", help="check the harness on restsvc alone with a GET "
                                             "path that exists, e.g. /rest/metadata/entities")
    return parser.parse_args(argv)


def profile(app, token, ids, args):
    from hotpath import profile
    chosen = [OPERATIONS[name] for name in args.only or OPERATIONS]
    chosen = [("GET", args.probe_path, None)] if args.probe_path else chosen
    return profile(app, token, {
        f"{method} {path}": (method, [(first or path).format(id=i) for i in ids],
                             BODY if method == "POST" else None)
        for method, path, first in chosen}, args.profile)


def baseline_server(workdir, app_env, baseline_url):
    """(the baseline's WSGI app module, its environment): on SQLite, or on PostgreSQL
    when ``baseline_url`` is given."""
    env = {"BASELINE_SECRET_KEY": app_env["RESTSVC_SECRET_KEY"]}
    if baseline_url:
        return "baseline_pg", {**env, "BASELINE_DATABASE_URL": baseline_url}
    return "baseline", {**env, "BASELINE_DATABASE": str(workdir / "baseline.db")}


def baseline_app(module, env):
    import importlib
    os.environ.update(env)
    return importlib.import_module(module).app


def service_against_load(app, token, ids, args):
    from inprocess import compare_operations
    from restsvc.demo.model import Order
    orders = [str(o.id) for o in Order.select(Order.id).order_by(Order.id)]
    app.database.close()
    return compare_operations(app, token, {
        "GET /rest/entities/Customer/<id>": [f"/rest/entities/Customer/{i}" for i in ids],
        "GET /rest/services/orderService/calculateTotal?orderId=<id>": [
            f"/rest/services/orderService/calculateTotal?orderId={i}" for i in orders],
    }, args.in_process, args.rounds)


def main(argv=None):
    args = parse_args(argv)
    if not (args.profile or args.no_wrk or args.in_process) and not shutil.which("wrk"):
        print(WRK_MISSING, file=sys.stderr)
        return 2
    # Stop cleanly on Ctrl-C and kill alike (also when started with SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    workdir, servers, cleanups = Path(tempfile.mkdtemp(prefix="restsvc-bench-")), [], []
    baseline_url = monitor = None
    try:
        app, app_env, token, ids = prepare(workdir)
        print(f"database: {len(ids)} customers in {workdir}")
        if args.postgres:   # the same data on PostgreSQL, the baseline there too
            from growth import postgres_schema
            url, drop_schema = postgres_schema(args.postgres)
            cleanups.append(drop_schema)
            url += f"&application_name={APPLICATION_NAMES['restsvc']}"
            app, app_env, token, _ = prepare(workdir, url, app_env["RESTSVC_SECRET_KEY"])
            cleanups.insert(0, app.database.close_all)
            print(f"restsvc and the baseline on PostgreSQL ({args.postgres})")
        if args.profile:
            return profile(app, token, ids, args)
        if args.in_process:
            return service_against_load(app, token, ids, args)
        if args.postgres:
            import psycopg2
            baseline_url, drop_baseline = build_postgres(url, tag_shape(app, token))
            schema = app.database.execute_sql("SELECT current_schema()").fetchone()[0]
            args.analyzed = [f'"{name}".customer' for name in (schema, f"{schema}_baseline")]
            cleanups.insert(0, drop_baseline)
            monitor = psycopg2.connect(args.postgres, application_name="restsvc-bench-monitor")
            monitor.autocommit = True
            cleanups.insert(0, monitor.close)
        else:
            build(workdir / "restsvc.db", workdir / "baseline.db", tag_shape(app, token))
        module, baseline_env = baseline_server(workdir, app_env, baseline_url)
        if not args.probe_path:
            report_in_process(*in_process(
                {"restsvc": app, "baseline": baseline_app(module, baseline_env)},
                token, ids, args), args)
        if args.no_wrk:
            return 0
        targets, paths = {"restsvc": "wsgi:app", "baseline": f"{module}:app"}, []
        args.apptime_dir = workdir / "apptime" if args.app_cpu else None
        if args.apptime_dir:
            paths = ["--pythonpath", str(HERE)]
            for name, target in targets.items():
                (args.apptime_dir / name).mkdir(parents=True)
                env = app_env if name == "restsvc" else baseline_env
                env.update(APPTIME_TARGET=target, APPTIME_DIR=str(args.apptime_dir / name))
            targets = dict.fromkeys(targets, "apptime:app")
        servers.append(start_server("restsvc", [*paths, targets["restsvc"]], app_env,
                                    workdir / "restsvc.log", REPO))
        servers.append(start_server("baseline", ["--pythonpath", str(HERE), targets["baseline"]],
                                    baseline_env, workdir / "baseline.log", HERE))
        status = report(*benchmark(args, workdir, token, ids, servers, monitor), args)
        if args.keep:
            for name, _, url in servers:
                print(f"{name}: {url}  (log {workdir / name}.log)")
            print(f"token: {token}\nservers keep running; Ctrl-C stops them")
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
        return status
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        for _, proc, _ in servers:
            stop_server(proc)
        for cleanup in cleanups:
            cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
