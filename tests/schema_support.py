"""A throwaway application whose model a test changes between steps: each
version is a module ``shop_<n>`` written into the test's directory, declaring
``Author`` (and more) with restsvc's public API; ``restsvc migrate`` runs
against a settings file naming it, in-process or as a real subprocess."""
import json
import os
import subprocess
import sys
import textwrap
import uuid
from contextlib import contextmanager

import pytest
import yaml
from werkzeug.test import Client

from conftest import PG_URL, REPO, basic, postgres_schema
from restsvc.app import RestApp
from restsvc.cli import main
from restsvc.settings import load_settings

HEADER = """
import peewee
from restsvc import Application, Entity, entity
"""


class Shop:
    def __init__(self, directory, url, monkeypatch):
        self.directory, self.url, self.version = directory, url, 0
        monkeypatch.syspath_prepend(str(directory))
        self.apps = []

    def declare(self, body, entities="Author"):
        """A new version of the model; later commands and apps use it."""
        self.version += 1
        # Unique for the run: an id() of an earlier Shop can come back, and
        # its module, already imported, would be used instead of this one.
        module = f"shop_{os.getpid()}_{uuid.uuid4().hex}_{self.version}"
        (self.directory / f"{module}.py").write_text(
            HEADER + textwrap.dedent(body) + f"\napplication = Application(entities=({entities},))\n")
        self.config = self.directory / f"restsvc-{self.version}.yaml"
        self.config.write_text(yaml.safe_dump({"svc": {
            "application": f"{module}:application", "secret-key": "schema-test-secret-key",
            "data-dir": str(self.directory), "datasource": {"url": self.url, "init-schema": False},
            "authserver": {"client": {"t": {"client-id": "t", "client-secret": "{noop}s",
                                            "resource-roles": "system-full-access"}}}}}))
        return self

    def migrate(self, *flags, capsys):
        """(exit code, stdout + stderr) of ``restsvc migrate`` run in this process."""
        code = main(["--config", str(self.config), "migrate", *flags])
        captured = capsys.readouterr()
        return code, captured.out + captured.err

    def spawn(self, *flags):
        """A real ``restsvc migrate`` process."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.directory), str(REPO)])}
        return subprocess.Popen([sys.executable, "-m", "restsvc.cli", "--config", str(self.config),
                                 "migrate", *flags], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def app(self, init_schema=False):
        settings = load_settings(self.config)
        if init_schema:
            from dataclasses import replace
            settings = replace(settings, init_schema=True)
        app = RestApp(settings)
        self.apps.append(app)
        return app

    def client(self, app=None):
        client = Client(app or self.app())
        token = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                            headers={"Authorization": basic("t", "s")}).json["access_token"]
        return client, {"Authorization": f"Bearer {token}"}

    def sql(self, statement, params=()):
        app = self.apps[-1] if self.apps else self.app()
        try:
            return app.database.execute_sql(statement, params).fetchall() if statement.lstrip(
                ).upper().startswith("SELECT") else app.database.execute_sql(statement, params)
        finally:
            app.database.close()

    def close(self):
        for app in self.apps:
            getattr(app.database, "close_all", app.database.close)()


@contextmanager
def database_url(tmp_path):
    if PG_URL:
        with postgres_schema("restsvc_schema") as url:
            yield url
    else:
        yield f"sqlite:///{tmp_path}/shop.db"


@pytest.fixture
def shop(tmp_path, monkeypatch):
    with database_url(tmp_path) as url:
        made = Shop(tmp_path, url, monkeypatch)
        yield made
        made.close()


def columns(shop, table):
    from restsvc.schema.inspect import inspect_database
    app = shop.apps[-1] if shop.apps else shop.app()
    try:
        return inspect_database(app.database)[table]
    finally:
        app.database.close()


def authors_containing(shop, value, attribute="name"):
    """The Authors whose ``attribute`` contains ``value``, by a search filter."""
    client, auth = shop.client()
    query = json.dumps({"conditions": [{"property": attribute, "operator": "contains",
                                        "value": value}]})
    response = client.get("/rest/entities/Author/search", query_string={
        "filter": query, "sort": attribute}, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return [row[attribute] for row in response.json]


def substring_index(table, column):
    """The name of ``table.column``'s substring index as restsvc declares it:
    the table's one FTS table on SQLite, the column's GIN index on PostgreSQL."""
    from restsvc.schema import trigram
    return trigram.index_name(table, column if PG_URL else None)


def older_substring_index(table, column):
    """The statements by which a restsvc before issue 41 made the substring
    index of ``table.column`` on SQLite: an FTS table of its own
    (``<table>_<column>_trgm``, one column ``v``) kept by three triggers."""
    name, t, c = f"{table}_{column}_trgm", f'"{table}"', f'"{column}"'
    fts = f'"{name}"'
    insert = f"INSERT INTO {fts}(rowid, v) SELECT new.rowid, unicode_lower(new.{c})"
    delete = f"DELETE FROM {fts} WHERE rowid = old.rowid"
    return (
        f"CREATE VIRTUAL TABLE {fts} USING fts5(v, tokenize='trigram case_sensitive 0')",
        f"INSERT INTO {fts}(rowid, v) SELECT rowid, unicode_lower({c}) FROM {t} "
        f"WHERE {c} IS NOT NULL",
        f'CREATE TRIGGER "{name}_ai" AFTER INSERT ON {t} WHEN new.{c} IS NOT NULL '
        f"BEGIN {insert}; END",
        f'CREATE TRIGGER "{name}_ad" AFTER DELETE ON {t} WHEN old.{c} IS NOT NULL '
        f"BEGIN {delete}; END",
        f'CREATE TRIGGER "{name}_au" AFTER UPDATE OF {c} ON {t} '
        f"BEGIN {delete}; {insert} WHERE new.{c} IS NOT NULL; END")
