"""Export speed and memory: the whole Customer table (1,000,000 rows by default)
through the API as CSV and NDJSON.

    python tests/benchmark/export.py [--rows 1000000] [--rounds 2]
        [--database-url postgresql://postgres@127.0.0.1:5432/test]

restsvc under gunicorn (one sync worker) on a fresh demo database, SQLite in
a temporary directory unless ``--database-url`` names PostgreSQL (a schema of
its own, dropped afterwards), filled with ROWS customers. Each download
(``GET /rest/entities/Customer?format=csv``, then ``format=ndjson``) is read
in 64 KiB pieces; memory is the worker's peak RSS during the request minus
its RSS before (Linux ``clear_refs``). Targets: CSV in under 10 s at 1,000,000
rows on SQLite, worker memory growth under 20 MiB on both databases.
"""
import argparse
import contextlib
import datetime
import sys
import tempfile
import time
import uuid
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS.parent))


def fill_customers(database_url, count):
    """``count`` customers beside the demo's, 10,000 rows per statement batch,
    in their stored forms (Peewee builds no statement per row)."""
    from restsvc import db
    from restsvc.demo.model import Customer, CustomerGrade
    database = db.open_database(database_url, 2)
    fields = [Customer.id, Customer.version, Customer.name, Customer.email, Customer.grade,
              Customer.birthDate, Customer.createdDate]
    columns = ", ".join(f'"{field.column_name}"' for field in fields)
    sql = (f'INSERT INTO "{Customer._meta.table_name}" ({columns}) '
           f'VALUES ({", ".join([database.param] * len(fields))})')
    grades = list(CustomerGrade)
    start = datetime.datetime(2024, 1, 1)
    with database.atomic():
        cursor = database.cursor()
        for first in range(0, count, 10000):
            rows = [(uuid.uuid4(), 1, f"Export customer {i:07d}", f"export{i}@example.com",
                     grades[i % 3], datetime.date(1950 + i % 50, 1 + i % 12, 1 + i % 28),
                     start + datetime.timedelta(seconds=i))
                    for i in range(first, min(first + 10000, count))]
            stored = [tuple(field.db_value(value) for field, value in zip(fields, row))
                      for row in rows]
            if db.is_sqlite(database):
                cursor.executemany(sql, stored)
            else:
                from psycopg2.extras import execute_batch
                execute_batch(cursor, sql, stored, page_size=1000)
    if not db.is_sqlite(database):
        # As autovacuum would in time: without statistics the planner takes
        # a freshly filled table for a small one and scans it for every chunk.
        database.execute_sql(f'ANALYZE "{Customer._meta.table_name}"')
    database.close()


def download(server, path):
    """(seconds, bytes, lines, worker RSS growth in KiB) of one streamed GET."""
    from servers import memory_kib, reset_peak
    pid = server.worker_pids()[0]
    reset_peak(pid)
    baseline = memory_kib(pid, "VmRSS")
    started = time.monotonic()
    conn = server.connection()
    size = lines = 0
    try:
        conn.request("GET", path, headers=server.auth())
        response = conn.getresponse()
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status} {response.read()[:500]!r}")
        while chunk := response.read(1 << 16):
            size += len(chunk)
            lines += chunk.count(b"\n")
    finally:
        conn.close()
    return time.monotonic() - started, size, lines, memory_kib(pid, "VmHWM") - baseline


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--database-url", help="PostgreSQL (default: SQLite in a temporary folder)")
    args = parser.parse_args()
    import conftest
    from restsvc.app import RestApp
    from servers import gunicorn_server
    with tempfile.TemporaryDirectory() as directory, contextlib.ExitStack() as stack:
        directory = Path(directory)
        url = f"sqlite:///{directory}/bench.db"
        if args.database_url:
            conftest.PG_URL = args.database_url
            url = stack.enter_context(conftest.postgres_schema("bench_export"))
        RestApp(conftest.make_settings(url, directory, {"svc.demo-data": True})).database.close()
        started = time.monotonic()
        fill_customers(url, args.rows)
        print(f"{args.rows} customers added in {time.monotonic() - started:.0f} s "
              f"({'PostgreSQL' if args.database_url else 'SQLite'}); load average "
              f"{open('/proc/loadavg').read().split()[0]}")
        with gunicorn_server(directory / "server", url, timeout=600) as server:
            download(server, "/rest/entities/Customer?format=csv&limit=10")    # warm up
            print(f"{'export':28} {'seconds':>8} {'MiB out':>8} {'lines':>9} {'RSS +MiB':>9}")
            for _ in range(args.rounds):
                for form in ("csv", "ndjson"):
                    seconds, size, lines, growth = download(
                        server, f"/rest/entities/Customer?format={form}")
                    print(f"{'Customer ' + form:28} {seconds:8.2f} {size / 2**20:8.1f} "
                          f"{lines:9d} {growth / 1024:9.1f}")


if __name__ == "__main__":
    main()
