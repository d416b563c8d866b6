"""Growth (issue 10): restsvc at a million customers, in process, on SQLite and PostgreSQL.

    python tests/benchmark/growth.py [--customers 1000000] [--orders 200000] [--repeat 30]
        [--only sqlite|postgresql] [--postgres-url postgresql://postgres@127.0.0.1:5432/test]
        [--explain] [--operation contains ...] [--caller global|tenant]

Builds the demo database (restsvc's own schema and indexes), bulk-loads the
generated customers and orders (indexes dropped during the load and created
again by restsvc's ``init_schema``, as at any start), then calls the WSGI app
in process (``werkzeug.test.Client``, bearer token checked on every request)
and prints the median and the spread (10th-90th percentile) of the time per
request in ms for each operation, and the median CPU time of the process
(the database's own work included on SQLite, which runs in it);
``--operation`` keeps only the operations whose label holds the text. SQLite lives in a temporary directory;
PostgreSQL in a schema of its own in the given database, dropped at the end.
The targets: every indexed operation under 10 ms, ``contains`` (on its
trigram index, issue 24) under 15 ms; the aggregate reads every order and the
deep ``offset`` page is the comparison for the cursor's, so they have none.
"""
import argparse
import io
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from dataset import REPO

TARGET_MS = 10.0
CONTAINS_TARGET_MS = 15.0
PAGE = 10_000           # the deep page, of 50 rows
NAMESPACE = uuid.UUID("6c1e0b5e-9a8f-4d55-b1f6-0f9a3f1d2c44")
STATUSES = ("10", "20", "30", "40")
TENANTS = ("north", "south")    # the demo's: customer i is TENANTS[i % 2]'s, its orders too
CALLER = {"tenant": False}      # --caller tenant: a user of north asks (run sets it)


def customer_rows(count):
    base = 1_700_000_000
    for i in range(count):
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(base + i * 7))
        yield (uuid.uuid5(NAMESPACE, f"c{i}"), f"Growth Customer {i:07d}",
               f"customer{i:07d}@example.com", "BSG"[i % 3],
               f"{1940 + i % 60}-{1 + i % 12:02d}-{1 + i % 28:02d}", created)


def order_rows(count, customers):
    pick = random.Random(7)
    for i in range(count):
        customer = pick.randrange(customers)
        yield (uuid.uuid5(NAMESPACE, f"o{i}"), f"G{i:07d}",
               f"20{20 + i % 6}-{1 + i % 12:02d}-{1 + i % 28:02d}",
               uuid.uuid5(NAMESPACE, f"c{customer}"), STATUSES[i % 4],
               f"{pick.randrange(100, 1_000_000) / 100:.2f}", TENANTS[customer % 2])


CUSTOMER_COLUMNS = ("id", "version", "name", "email", "grade", "birthDate", "createdDate",
                    "tenantId")
ORDER_COLUMNS = ("id", "version", "number", "date", "customer_id", "status", "amount",
                 "tenantId")


def bulk_load(app, customers, orders):
    """Insert the rows as fast as each database takes them, with the tables'
    secondary indexes dropped; ``init_schema`` creates them again."""
    from restsvc.db import is_sqlite
    from restsvc.schema.inspect import inspect_database
    database = app.database
    tables = inspect_database(database)
    for table in ("customer", "order"):
        for index in tables[table].indexes.values():
            if not index.unique:        # the trigram ones: their FTS table and triggers too
                for sql in index.drop or (f'DROP INDEX "{index.name}"',):
                    database.execute_sql(sql)
    tenanted = ((*row, TENANTS[i % 2]) for i, row in enumerate(customer_rows(customers)))
    tables = (("customer", CUSTOMER_COLUMNS, tenanted),
              ("order", ORDER_COLUMNS, order_rows(orders, customers)))
    with database.atomic():
        cursor = database.cursor()
        for table, columns, rows in tables:
            names = ", ".join(f'"{c}"' for c in columns)
            if is_sqlite(database):
                marks = ", ".join("?" for _ in columns)
                cursor.executemany(f'INSERT INTO "{table}" ({names}) VALUES ({marks})',
                                   ((r[0].hex, 1, *(v.hex if isinstance(v, uuid.UUID) else v
                                                    for v in r[1:])) for r in rows))
            else:
                _copy(cursor, table, names, rows)
    started = time.perf_counter()
    app.init_schema()
    database.connect(reuse_if_open=True)
    database.execute_sql("ANALYZE")
    database.close()
    return time.perf_counter() - started


def _copy(cursor, table, names, rows, chunk=100_000):
    while True:
        buffer = io.StringIO()
        written = 0
        for row in rows:
            buffer.write("\t".join([str(row[0]), "1", *map(str, row[1:])]) + "\n")
            written += 1
            if written == chunk:
                break
        if not written:
            return
        buffer.seek(0)
        cursor.copy_expert(f'COPY "{table}" ({names}) FROM STDIN', buffer)


def operations(customers, orders, client, headers):
    """(label, path maker) pairs; each maker takes a random generator."""
    def search(entity, condition, extra=""):
        return f"/rest/entities/{entity}/search?filter=" + json.dumps(
            {"conditions": [condition]}) + extra

    deep, page = {}, min(PAGE, max(2, customers // 100))     # a small run: half way

    def by_cursor(pick):
        """Page ``page`` by the cursor page ``page - 1`` links to (asked once, by offset)."""
        if "path" not in deep:
            response = client.get(f"/rest/entities/Customer?limit=50&offset={(page - 2) * 50}",
                                  headers=headers)
            link = response.headers.get("Link", "")
            deep["path"] = link[link.index("<") + 1:link.index(">")] if "<" in link else \
                f"/missing-link-{response.status_code}"
        return deep["path"]

    def number(pick, count=customers):
        """A customer's number the caller may read: a tenant's caller (``--caller
        tenant``, north) reads the even ones."""
        found = pick.randrange(count)
        return found - found % 2 if CALLER["tenant"] else found

    def cid(pick):
        return uuid.uuid5(NAMESPACE, f"c{number(pick)}")

    return [
        ("get by id", lambda p: f"/rest/entities/Customer/{cid(p)}"),
        ("list 50", lambda p: "/rest/entities/Customer?limit=50"),
        ("name = value", lambda p: search("Customer", {
            "property": "name", "operator": "=",
            "value": f"Growth Customer {number(p):07d}"})),
        ("email startsWith (10 rows)", lambda p: search("Customer", {
            "property": "email", "operator": "startsWith",
            "value": f"CUSTOMER{number(p, customers // 10):06d}"})),
        ("sort=name, limit 50", lambda p: "/rest/entities/Customer?limit=50&sort=name"),
        ("sort=-createdDate, limit 50",
         lambda p: "/rest/entities/Customer?limit=50&sort=-createdDate"),
        ("orders: customer = id", lambda p: search("Order", {
            "property": "customer", "operator": "=", "value": str(cid(p))})),
        # The rows under a page, read by their keys (the customers: one array on PostgreSQL).
        ("orders 50 with details", lambda p: "/rest/entities/Order?limit=50"
         "&fetchPlan=order-with-details"),
        ("orders: customer.name = value", lambda p: search("Order", {
            "property": "customer.name", "operator": "=",
            "value": f"Growth Customer {number(p):07d}"})),
        (f"list 50, page {page:,} by offset",
         lambda p: f"/rest/entities/Customer?limit=50&offset={(page - 1) * 50}"),
        (f"list 50, page {page:,} by cursor", by_cursor),
        ("orders: aggregate by grade, month", lambda p: "/rest/entities/Order/aggregate?"
         "groupBy=customer.grade,month(date)&count=true&sum=amount"),
        ("name contains, limit 50", lambda p: search("Customer", {
            "property": "name", "operator": "contains",
            "value": f"{number(p):07d}"}, "&limit=50")),
        ("email contains, limit 50", lambda p: search("Customer", {
            "property": "email", "operator": "contains",
            "value": f"R{number(p):07d}@"}, "&limit=50")),
        # Every email holds "@example.com": its trigrams are in every row.
        ("email contains, + common domain", lambda p: search("Customer", {
            "property": "email", "operator": "contains",
            "value": f"R{number(p):07d}@EXAMPLE"}, "&limit=50")),
    ]


def target(label):
    """The label's target in ms, or None."""
    if "contains" in label:
        return CONTAINS_TARGET_MS
    if "aggregate" in label or "offset" in label:
        return None
    return TARGET_MS


def explain(app, token, customers, orders, make_operations=None,
            shown=lambda sql: "restsvc_token" not in sql):
    """Each operation's statements (``shown``: but the token read) with the
    database's plan; ``make_operations(client, headers)``: the operations
    (else growth's)."""
    from werkzeug.test import Client

    from restsvc.db import is_sqlite
    database, seen = app.database, []
    execute = database.execute_sql
    client, headers = Client(app), {"Authorization": f"Bearer {token}"}
    make_operations = make_operations or (
        lambda client, headers: operations(customers, orders, client, headers))

    def recording(sql, params=None, *args, **kwargs):
        seen.append((sql, params))
        return execute(sql, params, *args, **kwargs)
    database.execute_sql = recording
    try:
        for label, make in make_operations(client, headers):
            path = make(random.Random(label))
            seen.clear()
            client.get(path, headers=headers)
            print(f"\n== {label}")
            for sql, params in [(q, p) for q, p in seen if shown(q)]:
                prefix = "EXPLAIN QUERY PLAN" if is_sqlite(database) else "EXPLAIN ANALYZE"
                print(f"  {sql if os.environ.get('FULL_SQL') else sql[:160]}")
                for row in execute(f"{prefix} {sql}", params).fetchall():
                    print(f"    {row[-1]}")
    finally:
        del database.execute_sql


def measure(app, token, customers, orders, repeat, make_operations=None, only=None):
    """(label, times in ms, error, CPU times in ms) of each operation
    (``make_operations(client, headers)``: the operations, else growth's;
    ``only``: those whose label holds one of these texts)."""
    from werkzeug.test import Client
    client, headers = Client(app), {"Authorization": f"Bearer {token}"}
    make_operations = make_operations or (
        lambda client, headers: operations(customers, orders, client, headers))
    results = []
    for label, make in make_operations(client, headers):
        if only and not any(text in label for text in only):
            continue
        pick, times, cpu, status = random.Random(label), [], [], None
        for attempt in range(repeat + 3):
            path = make(pick)
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(path, headers=headers)
            elapsed, spent = time.perf_counter() - started, time.process_time() - started_cpu
            if response.status_code != 200:
                status = f"{response.status_code} {response.text[:200]}"
                break
            if attempt >= 3:            # the first ones warm the caches
                times.append(elapsed * 1000)
                cpu.append(spent * 1000)
        results.append((label, times, status, cpu))
    return results


def build_app(url, workdir, tenant_caller=False):
    from werkzeug.test import Client

    from restsvc.app import RestApp
    from restsvc.settings import load_settings
    env = {"RESTSVC_CONFIG": str(REPO / "config" / "restsvc.yaml"),
           "RESTSVC_DATA_DIR": str(workdir), "RESTSVC_DATABASE_URL": url,
           "RESTSVC_SECRET_KEY": uuid.uuid4().hex + uuid.uuid4().hex}
    app = RestApp(replace(load_settings(environ=env), demo_data=True))
    asked = {"grant_type": "client_credentials"}
    if tenant_caller:       # a user of north with every permission: the tenant limits its rows
        from restsvc.security.users import User
        app.users.add("bench-north", "bench-password", ["rest-minimal", "system-full-access"])
        User.update(tenantId=TENANTS[0]).where(User.username == "bench-north").execute()
        asked = {"grant_type": "password", "username": "bench-north", "password": "bench-password"}
    response = Client(app).post("/oauth2/token", data=asked, auth=("demo-client", "demo-secret"))
    if response.status_code != 200:
        raise SystemExit(f"token endpoint answered {response.status_code}: {response.text}")
    return app, response.json["access_token"]


def run(name, url, workdir, args):
    CALLER["tenant"] = args.caller == "tenant"
    app, token = build_app(url, workdir, CALLER["tenant"])
    started = time.perf_counter()
    index_seconds = bulk_load(app, args.customers, args.orders)
    print(f"{name}: {args.customers:,} customers and {args.orders:,} orders loaded in "
          f"{time.perf_counter() - started:.0f}s (indexes {index_seconds:.0f}s)", flush=True)
    if args.explain:
        explain(app, token, args.customers, args.orders)
    return measure(app, token, args.customers, args.orders, args.repeat, only=args.operation)


def postgres_schema(url):
    """A URL bound to a new schema, and a function that drops it."""
    import psycopg2
    from playhouse.db_url import parse
    schema = f"restsvc_growth_{os.getpid()}"
    params = parse(url)
    conn = psycopg2.connect(dbname=params.pop("database"), **params)
    conn.autocommit = True
    conn.cursor().execute(f'CREATE SCHEMA "{schema}"')

    def drop():
        conn.cursor().execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}", drop


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(columns, title="in process, ms per request", target=target, note=None):
    """The table of each database's times; ``target(label)``: the label's
    target in ms or None, ``note``: the line under the table."""
    labels = [result[0] for result in next(iter(columns.values()))]
    print(f"\n{title:<36}" + "".join(
        f"{name + ' median':>20}{'p10-p90':>14}{'CPU':>7}" for name in columns))
    for row, label in enumerate(labels):
        line = f"{label:<36}"
        for results in columns.values():
            _, times, status, cpu = results[row]
            if status:
                line += f"{'error':>20}{'':>21}"
                print(f"  {label}: {status}")
                continue
            median = statistics.median(times)
            flag = "*" if target(label) and median >= target(label) else ""
            line += f"{median:>19.2f}{flag:1}{percentile(times, 0.1):>7.2f}-" \
                    f"{percentile(times, 0.9):<6.2f}{statistics.median(cpu):>7.2f}"
        print(line)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    note = note or f"above the target: {TARGET_MS:.0f} ms, contains {CONTAINS_TARGET_MS:.0f} ms"
    print(f"(* {note}; {os.cpu_count()} CPUs, load average {load})")


def arguments(description, repeat):
    """The options of a benchmark at a million customers (growth's and ranked_search.py's)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=repeat, help="requests per operation")
    parser.add_argument("--only", choices=("sqlite", "postgresql"), action="append")
    parser.add_argument("--explain", action="store_true",
                        help="print each operation's statements and their plans first")
    parser.add_argument("--operation", action="append",
                        help="only the operations whose label holds this text")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "RESTSVC_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"))
    return parser


def main(argv=None):
    parser = arguments(__doc__.split("\n\n")[0], 30)
    parser.add_argument("--orders", type=int, default=200_000)
    parser.add_argument("--caller", choices=("global", "tenant"), default="global",
                        help="demo-client (every tenant's rows) or a user of north")
    args = parser.parse_args(argv)
    report(on_each_database(args, run, "growth"))
    return 0


def on_each_database(args, run, name):
    """{database: run(name, url, workdir, args)} on SQLite (a file in a new
    directory) and PostgreSQL (a new schema), as ``args.only`` says; both
    are removed after."""
    workdir, columns = Path(tempfile.mkdtemp(prefix=f"restsvc-{name}-")), {}
    try:
        if "sqlite" in (args.only or ("sqlite",)):
            columns["SQLite"] = run("SQLite", f"sqlite:///{workdir / (name + '.db')}", workdir,
                                    args)
        if "postgresql" in (args.only or ("postgresql",)):
            url, drop = postgres_schema(args.postgres_url)
            try:
                columns["PostgreSQL"] = run("PostgreSQL", url, workdir, args)
            finally:
                from restsvc.db import database_proxy
                if hasattr(database_proxy.obj, "close_all"):    # a pool: give all back
                    database_proxy.obj.close_all()
                drop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return columns


if __name__ == "__main__":
    sys.exit(main())
