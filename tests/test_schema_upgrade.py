"""A database made by the previous release (tests/fixtures, see
make_previous_release.py) upgrades in place: every row kept, its tokens valid."""
import json
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
from werkzeug.test import Client

from conftest import PG_URL, basic, bearer, make_settings, postgres_schema
from restsvc.app import RestApp
from restsvc.cli import main
from restsvc.demo.model import Customer
from restsvc.schema import SchemaMismatch

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@contextmanager
def previous_release(tmp_path):
    """(URL, tokens) of a copy of the previous release's database."""
    tokens = json.loads((FIXTURES / "previous-release-tokens.json").read_text())
    if not PG_URL:
        shutil.copy(FIXTURES / "previous-release.db", tmp_path / "old.db")
        yield f"sqlite:///{tmp_path}/old.db", tokens["sqlite"]
        return
    with postgres_schema("restsvc_upgrade") as url:
        schema = url.rsplit("%3D", 1)[1]
        dump = (FIXTURES / "previous-release-pg.sql").read_text()
        dump = dump.replace("CREATE SCHEMA __SCHEMA__;", "").replace("__SCHEMA__", schema)
        app = RestApp(make_settings(url, tmp_path, {"svc.datasource.init-schema": False}),
                      check_schema=False)
        app.database.execute_sql(dump)
        app.database.close_all()
        yield url, tokens["postgresql"]


def counts(app, tables=None):
    """Rows per table: of ``tables``, or of every model's table that exists."""
    if tables is None:
        existing = set(app.database.get_tables())
        tables = sorted(m._meta.table_name for m in app.models
                        if m._meta.table_name in existing)
    try:
        return {t: app.database.execute_sql(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
                for t in tables}
    finally:
        app.database.close()


def test_a_previous_release_database_upgrades_keeping_rows_and_tokens(tmp_path, capsys):
    with previous_release(tmp_path) as (url, tokens):
        settings = make_settings(url, tmp_path, {"svc.datasource.init-schema": False,
                                                 "svc.demo-data": False})
        before = counts(RestApp(settings, check_schema=False))
        assert before["customer"] > 0 and before["restsvc_token"] >= 3
        with pytest.raises(SchemaMismatch, match="restsvc_migration: table missing"):
            RestApp(settings)
        config = tmp_path / "restsvc.yaml"
        config.write_text(json.dumps({"svc": {"datasource": {"url": url, "init-schema": False},
                                              "secret-key": settings.secret_key,
                                              "data-dir": str(tmp_path)}}))
        # The demo application: its entities are the previous release's too.
        # Its customers and orders are tenant-scoped now: migrate names the
        # tenant of the rows the previous release kept (restsvc/docs/tenants.md).
        assert main(["--config", str(config), "migrate"]) == 1
        assert "tenantId" in capsys.readouterr().out
        # Each index of theirs is replaced by one that the tenant leads: dropping
        # the old ones (no data is lost) is asked for.
        assert main(["--config", str(config), "migrate", "--tenant", "north"]) == 2
        assert "drop index customer_name" in capsys.readouterr().out
        assert main(["--config", str(config), "migrate", "--tenant", "north",
                     "--allow-destructive"]) == 0, capsys.readouterr()
        app = RestApp(settings)
        try:
            # Every row kept; the tables this release added are there, empty
            # but for the tenant the previous release's rows now belong to.
            assert counts(app, before) == before
            added = set(counts(app)) - set(before)
            assert added and counts(app, added) == {t: int(t == "restsvc_tenant") for t in added}
            app.database.connect(reuse_if_open=True)
            assert {row.tenantId for row in Customer.select(Customer.tenantId)} == {"north"}
            client = Client(app)
            for token in (tokens["alice_access"], tokens["client_access"]):
                assert client.get("/rest/entities/Customer", headers=bearer(token)).status_code == 200
            refreshed = client.post(
                "/oauth2/token", data={"grant_type": "refresh_token",
                                       "refresh_token": tokens["alice_refresh"]},
                headers={"Authorization": basic("demo-client", "demo-secret")})
            assert refreshed.status_code == 200, refreshed.get_data(as_text=True)
        finally:
            getattr(app.database, "close_all", app.database.close)()
