"""Test harness: a fresh demo app per test, on SQLite or on PostgreSQL.

SQLite (default): the demo database is built once per session and copied for
each test. PostgreSQL (``RESTSVC_TEST_DATABASE_URL=postgresql://...``): the run
gets its own schema, dropped at the end; each test starts from truncated
tables reloaded with the demo data.
"""
import base64
import dataclasses
import io
import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from werkzeug.test import Client

from restsvc.app import RestApp
from restsvc.security import clients
from restsvc.settings import build_settings

REPO = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO / "config"
# The file storage fixtures (fs and S3) for every test module.
pytest_plugins = ["files_support"]
PG_URL = os.environ.get("RESTSVC_TEST_DATABASE_URL", "")

# Hashes made during the tests (demo passwords, CLI) use a low cost factor:
# the suite tests what is hashed and compared, not how slowly. Verifying reads
# the cost from the stored hash, so nothing else changes.
clients.ITERATIONS = 1_000


def shipped_config():
    """config/restsvc.yaml, with its config-relative paths made absolute so a
    copy written elsewhere (for a real server or the CLI) still finds them."""
    config = yaml.safe_load((CONFIG_DIR / "restsvc.yaml").read_text())
    config["svc"]["core"]["messages-dir"] = str(CONFIG_DIR / config["svc"]["core"]["messages-dir"])
    for key in ("queries-config", "services-config"):
        config["svc"]["rest"][key] = str(CONFIG_DIR / config["svc"]["rest"][key])
    config["svc"]["reports"]["dir"] = str(CONFIG_DIR / config["svc"]["reports"]["dir"])
    return config


def make_settings(database_url, data_dir, overrides=None, base=None):
    """The shipped demo settings with a test database and data dir, plus dotted overrides."""
    values = {"svc.datasource.url": database_url, "svc.data-dir": str(data_dir)}
    values.update(overrides or {})
    config = shipped_config() if base is None else base
    # Overrides replace whole subtrees of the shipped file where they collide.
    _drop_keys(config, values)
    return build_settings({**config, **values}, base_dir=CONFIG_DIR, environ={})


def _drop_keys(tree, dotted):
    for key in dotted:
        node, parts = tree, key.split(".")
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(parts[-1], None)


@contextmanager
def postgres_schema(prefix):
    """A PostgreSQL URL bound to a new schema ``<prefix>_...``, dropped afterwards."""
    import psycopg2
    from playhouse.db_url import parse
    schema = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    params = parse(PG_URL)
    conn = psycopg2.connect(dbname=params.pop("database"), **params)
    conn.autocommit = True
    conn.cursor().execute(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{separator}options=-csearch_path%3D{schema}"
    finally:
        conn.cursor().execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()


@pytest.fixture(scope="session")
def pg_schema_url():
    """A PostgreSQL URL bound to a schema of this run's own."""
    with postgres_schema("restsvc_test") as url:
        yield url


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A demo database built once; tests get copies."""
    directory = tmp_path_factory.mktemp("template")
    path = directory / "template.db"
    settings = make_settings(f"sqlite:///{path}", directory, {"svc.demo-data": True})
    RestApp(settings)  # creates the schema and the demo data, then closes
    return path


@pytest.fixture
def database_url(request, tmp_path):
    """A database with the demo data, fresh for this test."""
    if PG_URL:
        url = request.getfixturevalue("pg_schema_url")
        _reset_postgres(url, tmp_path)
        return url
    path = tmp_path / "restsvc.db"
    shutil.copy(request.getfixturevalue("sqlite_template"), path)
    return f"sqlite:///{path}"


def _reset_postgres(url, tmp_path):
    settings = make_settings(url, tmp_path, {"svc.datasource.init-schema": False})
    app = RestApp(settings, check_schema=False)
    tables = ", ".join(f'"{m._meta.table_name}"' for m in app.models
                       if app.database.table_exists(m._meta.table_name))
    if tables:
        app.database.execute_sql(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    app.init_schema(demo_data=True)


@pytest.fixture
def make_app(database_url, tmp_path, file_storage):
    """Build an app on this test's database (and file storage) with extra dotted settings."""
    apps = []

    def build(overrides=None, application=None):
        settings = make_settings(database_url, tmp_path, {**file_storage, **(overrides or {})})
        app = RestApp(settings, application)
        apps.append(app)
        return app

    yield build
    for app in apps:
        close_app(app)


def close_app(app):
    """Close an app's connections (all of a pool's)."""
    app.database.close_all() if hasattr(app.database, "close_all") else app.database.close()


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return Client(app)


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def get_token(client, client_id="demo-client", secret="demo-secret"):
    response = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                           headers={"Authorization": basic(client_id, secret)})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json["access_token"]


def cpu_seconds(actions, runs=5):
    """{name: the least CPU time of ``action()``} for comparing the cost of
    answers whose difference is meant to be invisible (or is not). CPU time of
    this thread, taken in turns over several rounds: what other processes on
    the machine do neither adds to it nor favours one action."""
    least = {}
    for _ in range(runs):
        for name, action in actions.items():
            start = time.thread_time()
            action()
            spent = time.thread_time() - start
            least[name] = min(spent, least.get(name, spent))
    return least


def statements_sent(app, monkeypatch, action, pattern):
    """{key: statements} sent while ``action`` runs, of those the regular
    expression ``pattern`` matches (a wrapper around the database's
    ``execute_sql``), keyed by the match's group, or its groups when it has more."""
    database, counts = app.database, {}
    original = database.execute_sql

    def counting(sql, params=None, *args, **kwargs):
        found = pattern.match(sql)
        if found:
            key = found.group(1) if found.lastindex == 1 else found.groups()
            counts[key] = counts.get(key, 0) + 1
        return original(sql, params, *args, **kwargs)
    monkeypatch.setattr(database, "execute_sql", counting)
    try:
        action()
    finally:
        monkeypatch.undo()
    return counts


def at_once(work, count, timeout=None):
    """``work(n)`` for each n in ``range(count)``, each in a thread of its own,
    all let go together (a barrier): their results in the order of n. An
    exception in a thread is raised here, after all have ended."""
    results, failures = [None] * count, []
    barrier = threading.Barrier(count)

    def run(number):
        try:
            barrier.wait()
            results[number] = work(number)
        except BaseException as exc:     # handed to the caller
            failures.append(exc)
    threads = [threading.Thread(target=run, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if failures:
        raise failures[0]
    return results


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def password_grant(client, username="alice", password="alice-password",
                   client_id="demo-client", secret="demo-secret"):
    """The token endpoint's answer to a password grant (demo-client allows it)."""
    return client.post("/oauth2/token",
                       data={"grant_type": "password", "username": username, "password": password},
                       headers={"Authorization": basic(client_id, secret)})


@pytest.fixture
def auth(client):
    """Authorization headers of the demo's full-access client."""
    return {"Authorization": f"Bearer {get_token(client)}"}


@pytest.fixture
def run_cli(database_url, tmp_path, monkeypatch):
    """`restsvc --config <the test database> ...`, with stdin as given."""
    from restsvc.cli import main as cli
    config = shipped_config()
    config["svc"].update({"data-dir": str(tmp_path), "datasource": {"url": database_url}})
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump(config))

    def run(*args, stdin=""):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return cli(["--config", str(path), *args])
    return run


@pytest.fixture
def client_with_roles(make_app):
    """A client whose token carries rest-minimal plus the given roles, on an
    app that declares them beside the demo's own roles."""
    from restsvc.demo import application as demo

    def build(*roles, row_level=(), overrides=None):
        application = dataclasses.replace(
            demo, resource_roles=tuple(demo.resource_roles) + roles,
            row_level_roles=tuple(demo.row_level_roles) + tuple(row_level))
        prefix = "svc.authserver.client.tester."
        app = make_app({f"{prefix}client-id": "tester",
                        f"{prefix}client-secret": "{noop}tester-secret",
                        f"{prefix}resource-roles": ",".join(["rest-minimal"] + [r.code for r in roles]),
                        f"{prefix}row-level-roles": ",".join(r.code for r in row_level),
                        **(overrides or {})}, application=application)
        c = Client(app)
        return c, {"Authorization": f"Bearer {get_token(c, 'tester', 'tester-secret')}"}
    return build


def demo_id(kind, number):
    """The id of a demo row: demo_id("customer", 3)."""
    from restsvc.demo.data import _id
    return str(_id(kind, number))


@pytest.fixture
def reader_auth(client):
    return {"Authorization": f"Bearer {get_token(client, 'reader', 'reader-secret')}"}


@pytest.fixture
def alice_auth(client):
    """Authorization headers of the demo user alice (rest-minimal, sales-reader)."""
    response = password_grant(client)
    assert response.status_code == 200, response.get_data(as_text=True)
    return bearer(response.json["access_token"])


# --- real servers -------------------------------------------------------------

def http(method, url, data=None, headers=None):
    """(status, body bytes) of one real HTTP request."""
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def http_form(url, fields, client_id="demo-client", secret="demo-secret"):
    """POST a form with client authentication; (status, parsed JSON or None)."""
    data = "&".join(f"{k}={urllib.request.quote(v)}" for k, v in fields.items()).encode()
    status, body = http("POST", url, data, {"Authorization": basic(client_id, secret),
                                            "Content-Type": "application/x-www-form-urlencoded"})
    return status, json.loads(body) if body else None


@pytest.fixture
def start_servers(database_url, tmp_path):
    """``start_servers(n, workers)``: n real ``restsvc serve`` processes on this test's
    database, started together; returns their base URLs once all of them answer."""
    from servers import launch, stop, wait_until_ready
    started = []

    def start(count=1, workers=2):
        servers = [launch(tmp_path / f"server-{len(started) + i}", database_url, workers=workers)
                   for i in range(count)]
        started.extend(servers)
        return [wait_until_ready(server).base_url for server in servers]

    yield start
    for server in started:
        stop(server)
