"""Schema evolution (issue 18): how long ``restsvc migrate`` takes on a table
of a million rows, on SQLite and PostgreSQL.

    python tests/benchmark/migrate.py [--rows 1000000] [--only sqlite|postgresql]
        [--postgres-url postgresql://postgres@127.0.0.1:5432/test]

Makes a table ``item`` (id, version, name, number) with the rows, then
migrates it three times, timing each: (1) add a required column with a
default, (2) add an index on it, (3) widen ``name`` (on SQLite a table
rebuild; without the backup, which is a file copy). Prints each plan (what ``restsvc migrate --plan``
shows) and the seconds. SQLite lives in a temporary directory, PostgreSQL in
a schema of its own, dropped at the end. Not a test: figures for the README.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

import peewee

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conftest import postgres_schema  # noqa: E402
import conftest  # noqa: E402

from restsvc import schema  # noqa: E402
from restsvc.db import is_sqlite, open_database  # noqa: E402
from restsvc.model.entity import Entity  # noqa: E402


def model(*extra, name_length=100):
    fields = {"name": peewee.CharField(max_length=name_length), "number": peewee.IntegerField(),
              "Meta": type("Meta", (), {"table_name": "item"})}
    fields.update(dict(extra))
    return type("Item", (Entity,), fields)


def fill(database, rows):
    if is_sqlite(database):
        database.execute_sql(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO item (id, version, name, number) SELECT printf('%08x-0000-7000-8000-"
            "000000000000', i), 1, 'item ' || i, i FROM n", (rows,))
    else:
        database.execute_sql(
            "INSERT INTO item (id, version, name, number) SELECT ('00000000-0000-7000-8000-' "
            "|| lpad(to_hex(i), 12, '0'))::uuid, 1, 'item ' || i, i "
            "FROM generate_series(1, %s) i", (rows,))


def run(url, rows):
    database = open_database(url)
    schema.migrate(database, (model(),), backup=False)
    with database.atomic():
        fill(database, rows)
    print(f"{rows} rows in item")
    steps = (("add a column with a default", model(("grade", peewee.IntegerField(default=0)))),
             ("add an index", model(("grade", peewee.IntegerField(default=0, index=True)))),
             ("widen a string (SQLite: a table rebuild)", model(
                 ("grade", peewee.IntegerField(default=0, index=True)), name_length=200)))
    for label, changed in steps:
        for step in schema.migrate(database, (changed,), apply=False).steps:
            print(step.text())
        started = time.perf_counter()
        outcome = schema.migrate(database, (changed,), backup=False)
        assert outcome.applied and not outcome.blocked, outcome
        print(f"  {label}: {time.perf_counter() - started:.2f} s\n")
    getattr(database, "close_all", database.close)()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()
    if args.only != "postgresql":
        print("== SQLite")
        run(f"sqlite:///{tempfile.mkdtemp()}/migrate.db", args.rows)
    if args.only != "sqlite":
        print("== PostgreSQL")
        conftest.PG_URL = args.postgres_url
        with postgres_schema("restsvc_bench_migrate") as url:
            run(url, args.rows)


if __name__ == "__main__":
    main()
