"""Benchmark (issue 41, bulk writes): one POST of 1,000 new demo customers
(history, events and substring search on) against a raw ``executemany`` of
the same rows, same run, same database.

    python tests/benchmark/bulk.py [--rows 1000] [--rounds 10] [--database-url URL]
    python tests/benchmark/bulk.py --served [--rows 1000] [--rounds 10] [--database-url URL]
    python tests/benchmark/bulk.py --concurrent 50 [--rows 1000]
    python tests/benchmark/bulk.py --phases [--rows 1000] [--rounds 10] [--database-url URL]

Each round: ``POST /rest/entities/Customer`` with a list of ``--rows`` new
customers (name, email, grade, birth date, an embedded address), called in
process (no server, no sockets: what is left is restsvc's own time and the
database's), then the same rows written by one ``executemany`` in one
transaction (the rows only: no history, no events), into the table itself
(SQLite: its substring-search triggers run) and into a plain copy of it
(the same columns and indexes, no triggers: the issue's "raw executemany"),
and into the table itself again as one multi-row INSERT, the form the POST
sends (the database's own share of the POST's customer rows).
The raw rows are deleted after each round. Printed: the medians of wall
time, their ratio, and the statements the POST sent per table.
Targets (SQLite): at most 45 ms, at most 6x the raw write.

``--served``: the same POSTs through ``restsvc serve`` (its default workers
and threads), one request at a time over HTTP from this process: wall time
as the client sees it (the 1,000-row body sent, the answer read) and the
server's CPU time (its processes' user and system time from /proc), each
round followed by the raw ``executemany`` into the plain copy from this
process, on the same database.

``--phases``: where a POST's wall time goes, in process: planning its rows
(``Importer.plan``), the write path's steps (``Writer.save_all`` less the
sending of its pending rows), each table's INSERT statements, the commit,
and the rest (the body's parse, the answer). Timed by wrappers around those
functions, which add a few microseconds per row to planning and writing.
"""
import argparse
import contextlib
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import prepare                     # noqa: E402
from inprocess import _answer, _environs        # noqa: E402

TARGET_MS, TARGET_RATIO = 45.0, 6.0


def customers(rows, tag):
    return [{"name": f"Bulk {tag} {i:05d}", "email": f"bulk{tag}-{i}@example.com",
             "grade": ("BRONZE", "SILVER", "GOLD")[i % 3], "birthDate": "1980-01-02",
             "address": {"city": f"City {i % 50}", "street": f"{i} Main St"}}
            for i in range(rows)]


def raw_tables(app):
    """("customer", "raw_customer"): the table itself (SQLite: with its
    substring-search triggers) and a plain copy of it, the same columns and
    indexes without triggers (PostgreSQL: LIKE ... INCLUDING ALL, its
    trigram indexes included)."""
    from restsvc.db import execute, is_sqlite
    database = app.database
    execute(database, 'DROP TABLE IF EXISTS "raw_customer"')
    if not is_sqlite(database):
        execute(database, 'CREATE TABLE "raw_customer" (LIKE "customer" INCLUDING ALL)')
        return "customer", "raw_customer"
    execute(database, 'CREATE TABLE "raw_customer" AS SELECT * FROM "customer" WHERE 0')
    for name, sql in list(execute(database, "SELECT name, sql FROM sqlite_master WHERE "
                                            "type = 'index' AND tbl_name = 'customer' AND sql IS NOT NULL")):
        execute(database, sql.replace(f'"{name}"', f'"raw_{name}"', 1).replace(
            'ON "customer"', 'ON "raw_customer"', 1))
    return "customer", "raw_customer"


def _raw(app, table, rows, tag, together=False):
    """Wall ms of one executemany of ``rows`` customers like the POST's into
    ``table``, in a transaction on the app's own database; ``together``: the
    rows in one multi-row INSERT instead, as the POST sends them (on SQLite
    an FTS5 table fed by a trigger writes its pending terms at the end of
    every statement, so a statement per row costs it a segment per row)."""
    sql, values = raw_rows(app, table, rows, tag, together)
    database = app.database
    started = time.perf_counter()
    raw_write(app, sql, values, together)
    spent = (time.perf_counter() - started) * 1e3
    with database.atomic():
        database.cursor().execute(f'DELETE FROM "{table}" WHERE "name" LIKE {database.param}',
                                  (f"Raw {tag} %",))
    return spent


def raw_rows(app, table, rows, tag, together=False):
    """(SQL, parameters) of ``rows`` raw customers like the POST's into
    ``table``: an executemany's (a row's parameters each), or (``together``)
    one multi-row INSERT's."""
    from restsvc.demo.model import Customer
    fields = [Customer.id, Customer.version, Customer.name, Customer.email, Customer.grade,
              Customer.birthDate, Customer.address_city, Customer.address_street,
              Customer.createdDate, Customer.createdBy, Customer.lastModifiedDate,
              Customer.lastModifiedBy, Customer.tenantId]
    marks = ", ".join([app.database.param] * len(fields))
    columns = ", ".join('"%s"' % field.column_name for field in fields)
    sql = f'INSERT INTO "{table}" ({columns}) VALUES ({marks})'
    now = datetime.datetime(2026, 1, 1)
    values = [tuple(field.db_value(value) for field, value in zip(fields, (
        uuid.uuid4(), 1, f"Raw {tag} {i:05d}", f"raw{tag}-{i}@example.com", "B",
        datetime.date(1980, 1, 2), f"City {i % 50}", f"{i} Main St", now, "admin", now,
        "admin", ("north", "south")[i % 2]))) for i in range(rows)]
    if together:
        return (sql.replace(f"({marks})", ", ".join([f"({marks})"] * rows)),
                [value for row in values for value in row])
    return sql, values


def raw_write(app, sql, values, together=False):
    """The raw rows of ``raw_rows`` written in one transaction."""
    database = app.database
    cursor = database.cursor()
    with database.atomic():
        if together:
            cursor.execute(sql, values)
        else:
            cursor.executemany(sql, values)


def _history_trigram(app):
    """The names of history_item's substring-search indexes (there should be none)."""
    from restsvc.db import execute, is_sqlite
    sql = ("SELECT name FROM sqlite_master WHERE name LIKE 'history_item%trgm%'"
           if is_sqlite(app.database) else
           "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'history_item%%trgm%%'")
    return ", ".join(name for name, in execute(app.database, sql))


def _inserted_table(sql):
    """The table an INSERT statement writes to, or None for another statement."""
    words = sql.split()
    return words[2].strip('"') if words and words[0].upper() == "INSERT" else None


def counted(app, environ, body, kind_of):
    """(status, answer, {kind: statements}) of one request in process, each
    statement's kind by ``kind_of(sql)`` (None: not counted), counted by a
    wrapper around execute_sql."""
    database = app.database
    counts = {}
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        kind = kind_of(sql)
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
        return original(sql, params, *args, **kwargs)
    database.execute_sql = counting
    try:
        status, payload = _answer(app, environ, body)
    finally:
        del database.execute_sql
    return status, payload, counts


def _statements(app, environ, body):
    """{table: INSERT statements} of one POST."""
    status, payload, counts = counted(app, environ, body, _inserted_table)
    if not status.startswith("201"):
        raise SystemExit(f"bulk create answered {status}: {payload[:300]!r}")
    return counts


@contextlib.contextmanager
def _serving(workdir, serve_options=(), database_url=None):
    """(app, token, url of Customer, server pid) of ``restsvc serve`` on a
    prepared dataset, stopped on leaving."""
    import socket
    import subprocess
    from servers import free_port, stop_server
    app, env, token, _ = prepare(Path(workdir), database_url)
    port = free_port()
    log = Path(workdir) / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "restsvc.cli", "serve", "--port", str(port),
                                 *serve_options],
                                env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"restsvc serve did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield app, token, f"http://127.0.0.1:{port}/rest/entities/Customer", proc.pid
    finally:
        stop_server(proc)


def _cpu_seconds(pid):
    """User and system CPU seconds of ``pid`` and its descendants (/proc)."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return total
    return total + sum(_cpu_seconds(int(child)) for child in children)


def _served(workdir, rounds, rows, database_url=None):
    """``rounds`` bulk POSTs of ``rows`` customers one at a time through
    ``restsvc serve``, each with the raw executemany of its rows after it."""
    from servers import one_request
    with _serving(workdir, database_url=database_url) as (app, token, url, pid):
        tables = raw_tables(app)
        walls, cpus, raws = [], [], []
        for round_number in range(rounds + 1):      # round 0: warm-up (both workers may take it)
            body = json.dumps(customers(rows, f"s{round_number}"))
            cpu, started = _cpu_seconds(pid), time.perf_counter()
            status, payload = one_request(url, "POST", token, body)
            wall = (time.perf_counter() - started) * 1e3
            if status != 201:
                raise SystemExit(f"bulk create answered {status}: {str(payload)[:300]}")
            cpu = (_cpu_seconds(pid) - cpu) * 1e3
            raw = _raw(app, tables[1], rows, f"s{round_number}")
            if round_number:
                walls.append(wall), cpus.append(cpu), raws.append(raw)
    kind = "PostgreSQL" if database_url else "SQLite"
    post, raw = statistics.median(walls), statistics.median(raws)
    ratios = sorted(w / r for w, r in zip(walls, raws))
    print(f"{kind}, {rows} customers through restsvc serve, {rounds} rounds one at a time "
          f"(ms: median, range)")
    print(f"  bulk POST, wall at the client   {post:7.1f}  ({min(walls):.1f}-{max(walls):.1f})"
          f"  server CPU {statistics.median(cpus):.1f} ({min(cpus):.1f}-{max(cpus):.1f})")
    print(f"  executemany into raw_customer   {raw:7.1f}  ({min(raws):.1f}-{max(raws):.1f})"
          f"  POST / it: {post / raw:.1f}x (rounds {ratios[0]:.1f}-{ratios[-1]:.1f})")
    if not database_url:
        verdict = post <= TARGET_MS and post / raw <= TARGET_RATIO
        print(f"  target: <= {TARGET_MS:.0f} ms and <= {TARGET_RATIO:.0f}x: "
              f"{'met' if verdict else 'missed'}")


def _concurrent(workdir, count, rows, serve_options=()):
    """``count`` concurrent bulk creates of ``rows`` customers under
    ``restsvc serve`` (its default workers and threads) on SQLite: every
    answer 201, and every row has what a create one at a time writes (one
    CREATE history item with the same changes, one event with the same
    changed attributes, one substring-search row holding its three indexed columns)."""
    import concurrent.futures
    import sqlite3
    from servers import one_request
    with _serving(workdir, serve_options) as (_, token, url, _):
        alone = one_request(url, "POST", token, json.dumps(customers(1, "alone")[0]))
        assert alone[0] == 201, alone
        bodies = [json.dumps(customers(rows, f"c{n}")) for n in range(count)]
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            answers = list(pool.map(lambda body: one_request(url, "POST", token, body), bodies))
        spent = time.perf_counter() - started
    statuses = {}
    for status, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1
    db = sqlite3.connect(Path(workdir) / "restsvc.db")
    ids = [row["id"] for status, payload in answers if status == 201 for row in payload]
    hexes = [entity_id.replace("-", "") for entity_id in ids]
    db.execute("CREATE TEMP TABLE made (id TEXT, hex TEXT)")
    db.executemany("INSERT INTO made VALUES (?, ?)", zip(ids, hexes))
    one = lambda sql: db.execute(sql).fetchone()[0]     # noqa: E731
    items = db.execute("SELECT kind, changes, count(*) FROM history_item WHERE entityId IN "
                       "(SELECT id FROM made) GROUP BY kind, changes").fetchall()
    events = db.execute("SELECT kind, changed, version, count(*) FROM restsvc_event WHERE "
                        "entityId IN (SELECT id FROM made) GROUP BY kind, changed, version"
                        ).fetchall()
    alone_id = alone[1]["id"]
    alone_item = db.execute("SELECT kind, changes FROM history_item WHERE entityId = ?",
                            (alone_id,)).fetchall()
    alone_event = db.execute("SELECT kind, changed, version FROM restsvc_event WHERE entityId = ?",
                             (alone_id,)).fetchall()
    names = lambda changes: sorted(c["name"] for c in json.loads(changes))     # noqa: E731
    # One FTS row per customer, its columns (v0, v1, v2: name, email, city) filled.
    fts = {label: one(f'SELECT count(*) FROM "customer_trgm" WHERE rowid IN (SELECT rowid FROM '
                      f"customer WHERE lower(id) IN (SELECT hex FROM made)) AND {held}")
           for label, held in (("rows", "1"), ("name", "v0 IS NOT NULL"),
                               ("email", "v1 IS NOT NULL"), ("city", "v2 IS NOT NULL"))}
    print(f"SQLite, {count} concurrent bulk creates of {rows} customers under restsvc serve: "
          f"{spent:.1f} s; answers {statuses}")
    print(f"  rows {len(ids)}, history items {sum(n for *_, n in items)}, events "
          f"{sum(n for *_, n in events)}, substring-search rows {fts}")
    same = ({(k, tuple(names(c))) for k, c, _ in items} == {(k, tuple(names(c))) for k, c in alone_item}
            and {e[:3] for e in events} == set(alone_event))
    whole = (statuses == {201: count} and len(set(ids)) == count * rows
             and sum(n for *_, n in items) == len(ids) == sum(n for *_, n in events)
             and all(n == len(ids) for n in fts.values()))
    print(f"  all 201 and every row written whole: {whole}; as a create one at a time: {same}")


def _phases(app, token, rows, rounds):
    """Median wall ms of each phase of ``rounds`` bulk POSTs (``--phases``)."""
    import peewee
    from restsvc.data.write import importer, pending, writer
    from restsvc.db import is_sqlite
    from restsvc.statements import Statements
    spent = {}

    def timed(owner, name, label_of):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                label = label_of(args)
                spent[label] = spent.get(label, 0.0) + time.perf_counter() - started
        setattr(owner, name, wrapper)

    def statement(args):
        return f"statements: {_inserted_table(args[1]) or 'other'}"
    timed(importer.Importer, "plan", lambda args: "planning rows")
    timed(writer.Writer, "save_all", lambda args: "save_all")
    timed(pending.Pending, "flush", lambda args: "flush")
    timed(Statements, "_run", statement)
    timed(peewee.Database, "commit", lambda args: "commit")
    figures = {}
    for round_number in range(rounds + 1):          # round 0: warm-up
        body = json.dumps(customers(rows, f"f{round_number}")).encode()
        environ = _environs("POST", ["/rest/entities/Customer"], token, body)[0]
        spent.clear()
        started = time.perf_counter()
        status, payload = _answer(app, environ, body)
        whole = time.perf_counter() - started
        if not status.startswith("201"):
            raise SystemExit(f"bulk create answered {status}: {payload[:300]!r}")
        if not round_number:
            continue
        sql = {label: value for label, value in spent.items() if label.startswith("statements")}
        # A bulk of creates sends its statements from the flush, inside save_all.
        phases = {"planning rows": spent["planning rows"],
                  "write steps (Python)": spent["save_all"] - spent["flush"],
                  "sending rows (Python)": spent["flush"] - sum(sql.values()),
                  **sql, "commit": spent.get("commit", 0.0)}
        phases["the rest (body, answer)"] = whole - spent["planning rows"] - spent["save_all"] \
            - phases["commit"]
        phases["whole POST"] = whole
        for label, value in phases.items():
            figures.setdefault(label, []).append(value * 1e3)
    kind = "SQLite" if is_sqlite(app.database) else "PostgreSQL"
    print(f"{kind}, {rows} customers, {rounds} rounds: where a POST's time goes "
          f"(wall ms: median, range)")
    for label, values in figures.items():
        print(f"  {label:36s} {statistics.median(values):7.1f}  "
              f"({min(values):.1f}-{max(values):.1f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--database-url", default=None,
                        help="PostgreSQL URL (a fresh database: its tables are replaced)")
    parser.add_argument("--concurrent", type=int, default=0,
                        help="instead: this many concurrent bulk creates under restsvc serve (SQLite)")
    parser.add_argument("--served", action="store_true",
                        help="instead: the POSTs through restsvc serve, one at a time")
    parser.add_argument("--phases", action="store_true",
                        help="instead: where a POST's time goes, in process")
    parser.add_argument("--serve-option", action="append", default=[],
                        help="passed to restsvc serve (for example --serve-option=--threads=1)")
    args = parser.parse_args()
    if args.concurrent:
        with tempfile.TemporaryDirectory() as workdir:
            _concurrent(workdir, args.concurrent, args.rows, args.serve_option)
        return
    if args.served:
        with tempfile.TemporaryDirectory() as workdir:
            _served(workdir, args.rounds, args.rows, args.database_url)
        return
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, _ = prepare(Path(workdir), args.database_url)
        if args.phases:
            _phases(app, token, args.rows, args.rounds)
            return
        tables = raw_tables(app)
        kinds = [(table, False) for table in tables] + [(tables[0], True)]
        posts, cpus, raws = [], [], {kind: [] for kind in kinds}
        for round_number in range(args.rounds + 1):        # round 0: warm-up
            body = json.dumps(customers(args.rows, f"r{round_number}")).encode()
            environ = _environs("POST", ["/rest/entities/Customer"], token, body)[0]
            if round_number == 0:
                counts = _statements(app, environ, body)
                continue
            started, cpu = time.perf_counter(), time.process_time()
            status, payload = _answer(app, environ, body)
            posts.append((time.perf_counter() - started) * 1e3)
            cpus.append((time.process_time() - cpu) * 1e3)
            if not status.startswith("201"):
                raise SystemExit(f"bulk create answered {status}: {payload[:300]!r}")
            for table, together in kinds:
                raws[table, together].append(
                    _raw(app, table, args.rows, f"r{round_number}", together))
        post = statistics.median(posts)
        kind = "PostgreSQL" if args.database_url else "SQLite"
        print(f"{kind}, {args.rows} customers, {args.rounds} rounds (wall ms: median, range)")
        print(f"  bulk POST                       {post:7.1f}  ({min(posts):.1f}-{max(posts):.1f})"
              f"  CPU of this process {statistics.median(cpus):.1f} ({min(cpus):.1f}-{max(cpus):.1f})")
        for (table, together), spent in raws.items():
            raw = statistics.median(spent)
            ratios = sorted(p / r for p, r in zip(posts, spent))
            how = f"one INSERT into {table}" if together else f"executemany into {table}"
            print(f"  {how:31s} {raw:7.1f}  ({min(spent):.1f}-{max(spent):.1f})"
                  f"  POST / it: {post / raw:.1f}x (rounds {ratios[0]:.1f}-{ratios[-1]:.1f})")
        print("  INSERT statements per table (warm-up POST): "
              + ", ".join(f"{table} {n}" for table, n in sorted(counts.items())))
        print(f"  substring-search indexes of history_item: {_history_trigram(app) or 'none'}")
        if not args.database_url:
            raw = statistics.median(raws["raw_customer", False])
            verdict = post <= TARGET_MS and post / raw <= TARGET_RATIO
            print(f"  target (against the plain copy): <= {TARGET_MS:.0f} ms and "
                  f"<= {TARGET_RATIO:.0f}x: {'met' if verdict else 'missed'}")
        from restsvc.db import execute
        execute(app.database, 'DROP TABLE IF EXISTS "raw_customer"')


if __name__ == "__main__":
    main()
