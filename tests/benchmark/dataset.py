"""The benchmark's data: a fresh demo database with 1,000 customers, built by restsvc itself."""
import argparse
import contextlib
import datetime
import shutil
import sqlite3
import sys
import tempfile
import uuid
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))  # restsvc from this checkout even when not installed
CUSTOMERS = 1000
NAMESPACE = uuid.UUID("0b6f6c51-3c1e-4b8e-9d43-6a0f2f3e7b21")


def bench_customer(i):
    """Deterministic rows that fill the demo's 20 customers up to CUSTOMERS."""
    # The demo's customers are tenant-scoped: bench customers alternate as its own do.
    return dict(id=uuid.uuid5(NAMESPACE, f"customer-{i}"), tenantId=("north", "south")[i % 2],
                name=f"Bench Customer {i:04d}",
                email=f"customer{i:04d}@example.com", grade=("B", "S", "G")[i % 3],
                birthDate=datetime.date(1950 + i % 50, 1 + i % 12, 1 + i % 28),
                createdDate=datetime.datetime(2024, 2, 1, 8, 0) + datetime.timedelta(minutes=i))


def prepare(workdir, database_url=None, secret_key=None):
    """(app, environment for restsvc, access token, customer ids) on ``workdir/restsvc.db``
    (or ``database_url``).

    The shipped config with the database, data dir and a random secret key
    overridden through restsvc's environment variables; the token comes from
    the real token endpoint (demo-client: rest-minimal + system-full-access).
    """
    from werkzeug.test import Client

    from restsvc.app import RestApp
    from restsvc.demo.model import Customer
    from restsvc.settings import load_settings
    env = {"RESTSVC_CONFIG": str(REPO / "config" / "restsvc.yaml"),
           "RESTSVC_DATA_DIR": str(workdir),
           "RESTSVC_DATABASE_URL": database_url or f"sqlite:///{workdir / 'restsvc.db'}",
           "RESTSVC_SECRET_KEY": secret_key or uuid.uuid4().hex + uuid.uuid4().hex}
    app = RestApp(replace(load_settings(environ=env), demo_data=True))
    with app.database.atomic():
        rows = [bench_customer(i) for i in range(CUSTOMERS - Customer.select().count())]
        for start in range(0, len(rows), 100):
            Customer.insert_many(rows[start:start + 100]).execute()
    ids = [str(c.id) for c in Customer.select(Customer.id).order_by(Customer.id)]
    response = Client(app).post("/oauth2/token", data={"grant_type": "client_credentials"},
                                auth=("demo-client", "demo-secret"))
    if response.status_code != 200:
        raise SystemExit(f"token endpoint answered {response.status_code}: {response.text}")
    app.database.close()
    return app, env, response.json["access_token"], ids


def tag_shape(app, token):
    """What restsvc's ETag of a Customer read with ``_base`` digests besides the
    id, for the caller of ``token`` (``data/answer/etags.py``): the baseline writes the
    same ETags with it."""
    from restsvc.data.access import access_for
    from restsvc.data.answer.etags import tag_shape as shape
    principal = app.gate.principal("/rest/entities/Customer", f"Bearer {token}")
    access = access_for(app, principal)
    meta = app.data.entity("Customer")
    found = shape(app.data.plan(meta, None), access.permissions, access.session, False)
    app.database.close()
    return found


def share_token(app, token, sqlite_path):
    """The row of ``token`` (issued on ``app``'s database) copied into another
    SQLite database, so the baseline there accepts it too."""
    from restsvc.security.tokens import StoredToken
    row = StoredToken.select().where(StoredToken.token_hash == app.tokens.hash(token)).dicts().get()
    app.database.close()
    target = sqlite3.connect(sqlite_path)
    try:
        names = ", ".join(row)
        target.execute(f"INSERT INTO restsvc_token ({names}) VALUES ({', '.join('?' for _ in row)})",
                       list(row.values()))
        target.commit()
    finally:
        target.close()


def copy_database(source_path, target_path):
    """A consistent copy (WAL included) for the baseline, so neither server sees the
    other's inserts."""
    source, target = sqlite3.connect(source_path), sqlite3.connect(target_path)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


@contextlib.contextmanager
def scratch(prefix):
    """(a new directory, a list of cleanups): both undone at the end, the
    cleanups (closing a database, dropping a schema) first, in order."""
    workdir, cleanups = Path(tempfile.mkdtemp(prefix=prefix)), []
    try:
        yield workdir, cleanups
    finally:
        for cleanup in cleanups:
            cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def arguments(doc, count, rounds):
    """The options every in-process benchmark takes: ``--count`` (per
    round), ``--rounds`` and ``--database-url``; its description is the
    first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=count, help="per round")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--database-url", help="default: SQLite in a temporary directory")
    return parser
