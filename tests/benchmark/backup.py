"""Backups (issue 39): how the service answers while ``restsvc backup`` copies a
database of a million rows, on SQLite and PostgreSQL.

    python tests/benchmark/backup.py [--rows 1000000] [--only sqlite|postgresql]
        [--seconds 20] [--threads 4] [--workers 2]
        [--postgres-url postgresql://postgres@127.0.0.1:5432/test]

Builds the benchmark's demo database (tests/benchmark/dataset.py: 1,000
customers) and adds customers up to ``--rows`` with one INSERT ... SELECT,
then serves it with ``restsvc serve``. Client threads send a steady mix
(three reads of a customer by id, one create) over keep-alive-less HTTP:
first ``--seconds`` without a backup, then while a real ``restsvc backup``
process runs. Prints, for each phase: requests, failures, p50, p99 and max
latency; then the backup's seconds and size, and how long ``restsvc restore``
of it into an empty database takes. Not a test: figures for the README.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))           # dataset.py
sys.path.insert(0, str(HERE.parent))    # conftest.py, servers.py (before benchmark/servers.py)
from conftest import REPO, http, postgres_schema  # noqa: E402
import conftest  # noqa: E402
from servers import _write_config, launch, stop, wait_until_ready  # noqa: E402

import dataset  # noqa: E402 (tests/benchmark/dataset.py)


def fill(database, rows):
    """Customers up to ``rows``: copies of one with new ids and names, in one statement."""
    from restsvc.db import is_sqlite
    from restsvc.demo.model import Customer
    have = Customer.select().count()
    if have >= rows:
        return
    template = Customer.select(Customer.id).limit(1).scalar(as_tuple=False)
    table = Customer._meta.table_name
    columns = [c.name for c in database.get_columns(table)]
    quoted = ", ".join(f'"{c}"' for c in columns)
    if is_sqlite(database):
        stored = database.execute_sql(f'SELECT id FROM "{table}" LIMIT 1').fetchone()[0]
        # the id in the form the column holds it (hex, with or without dashes)
        new_id = ("lower(hex(randomblob(16)))" if len(str(stored)) == 32 else
                  "lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) "
                  "|| '-' || substr(h, 17, 4) || '-' || substr(h, 21))")
        values = ", ".join(new_id if c == "id" else "'Filler ' || i" if c == "name" else f'"{c}"'
                           for c in columns)
        database.execute_sql(
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?), "
            f"g AS (SELECT i, hex(randomblob(16)) AS h FROM n) "
            f'INSERT INTO "{table}" ({quoted}) SELECT {values} FROM g, "{table}" '
            f"WHERE \"{table}\".id = ?", (rows - have, stored))
    else:
        values = ", ".join("gen_random_uuid()" if c == "id" else "'Filler ' || i" if c == "name"
                           else f'"{c}"' for c in columns)
        database.execute_sql(
            f'INSERT INTO "{table}" ({quoted}) SELECT {values} FROM generate_series(1, %s) i, '
            f'"{table}" WHERE "{table}".id = %s', (rows - have, template))


class Load:
    """Client threads: reads of a customer by id and creates, every latency kept."""

    def __init__(self, base_url, token, ids, threads):
        self.base_url, self.ids = base_url, ids
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.samples, self.stop = [], threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(n,)) for n in range(threads)]

    def run(self, number):
        rng, count = random.Random(number), 0
        while not self.stop.is_set():
            count += 1
            started = time.monotonic()
            if count % 4:
                status, _ = http("GET", f"{self.base_url}/rest/entities/Customer/"
                                        f"{rng.choice(self.ids)}", None, self.headers)
                ok = status == 200
            else:
                status, _ = http("POST", f"{self.base_url}/rest/entities/Customer", json.dumps(
                    {"name": f"load {number} {count}", "grade": "GOLD"}).encode(), self.headers)
                ok = status == 201
            self.samples.append((started, time.monotonic() - started, ok))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def summary(self, start, end):
        window = [(seconds, ok) for at, seconds, ok in self.samples if start <= at < end]
        latencies = sorted(seconds for seconds, _ in window)
        if not latencies:
            return "no requests"
        def pick(q):
            return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
        return (f"{len(window)} requests ({len(window) / (end - start):.0f}/s), "
                f"{sum(1 for _, ok in window if not ok)} failed; p50 {pick(0.5):.1f} ms, "
                f"p99 {pick(0.99):.1f} ms, max {latencies[-1] * 1000:.1f} ms")


def run(url, target_url, rows, seconds, threads, workers, workdir):
    app, _env, _token, ids = dataset.prepare(workdir, url)
    started = time.monotonic()
    with app.database.atomic():
        fill(app.database, rows)
    from restsvc.demo.model import Customer
    print(f"  {Customer.select().count()} customers ({time.monotonic() - started:.0f} s to fill)")
    app.database.close()
    server = wait_until_ready(launch(workdir / "server", url, workers=workers))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    config = workdir / "server" / "server.yaml"
    archive = workdir / "backup.tar"
    try:
        with Load(server.base_url, server.token, ids, threads) as load:
            time.sleep(2)               # warm up
            quiet = time.monotonic()
            time.sleep(seconds)
            began = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "restsvc.cli", "--config", str(config),
                                   "backup", "--output", str(archive)], env=env,
                                  capture_output=True, text=True)
            ended = time.monotonic()
        if done.returncode:
            raise SystemExit(done.stderr)
        print(f"  without a backup ({seconds} s): {load.summary(quiet, began)}")
        print(f"  during the backup ({ended - began:.1f} s): {load.summary(began, ended)}")
        print(f"  {done.stdout.strip()}")
    finally:
        stop(server)
    target = workdir / "target"
    target.mkdir()
    target_config = _write_config(target, target_url, {"svc.datasource.init-schema": False})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "restsvc.cli", "--config", str(target_config),
                           "restore", str(archive)], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stdout + done.stderr)
    print(f"  restore into an empty database: {time.monotonic() - started:.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    options = (args.rows, args.seconds, args.threads, args.workers)
    if args.only != "postgresql":
        with tempfile.TemporaryDirectory() as directory:
            print("SQLite")
            workdir = Path(directory)
            run(f"sqlite:///{workdir / 'restsvc.db'}", f"sqlite:///{workdir / 'restored.db'}",
                *options, workdir)
    if args.only != "sqlite":
        conftest.PG_URL = args.postgres_url
        with tempfile.TemporaryDirectory() as directory, \
                postgres_schema("restsvc_bench") as url, \
                postgres_schema("restsvc_bench_restore") as target_url:
            print("PostgreSQL")
            run(url, target_url, *options, Path(directory))


if __name__ == "__main__":
    main()
