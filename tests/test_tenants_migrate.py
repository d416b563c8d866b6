"""``restsvc migrate --tenant KEY`` and ``restsvc tenant``: an existing
single-tenant database becomes a tenant's (restsvc/docs/tenants.md)."""
import io
import uuid

import peewee
import pytest
import yaml
from werkzeug.test import Client

from conftest import PG_URL, postgres_schema, shipped_config
from restsvc.cli import main as cli
from restsvc.demo.model import Country
from restsvc.security.users import User
from tenant_app import APPLICATION, PASSWORD, USERS, token


@pytest.fixture
def database_url(database_url):
    """On PostgreSQL a schema of this test's own: ``migrate --allow-destructive``
    would drop the tables other tests of the run left in the shared one."""
    if not PG_URL:
        yield database_url
        return
    with postgres_schema("restsvc_tenants") as url:
        yield url


def run(database_url, tmp_path, *args):
    config = shipped_config()
    config["svc"].update({"application": "tenant_app:APPLICATION", "data-dir": str(tmp_path),
                          "datasource": {"url": database_url, "init-schema": False}})
    path = tmp_path / "tenants.yaml"
    path.write_text(yaml.safe_dump(config))
    return cli(["--config", str(path), *args])


def single_tenant_accounts(database):
    """The Account table as it was before the model declared tenant=True, with two rows."""
    database.execute_sql('DROP TABLE IF EXISTS "ticket"')
    database.execute_sql('DROP TABLE IF EXISTS "note"')
    database.execute_sql('DROP TABLE IF EXISTS "account"')

    class Account(peewee.Model):
        id = peewee.UUIDField(primary_key=True)
        version = peewee.IntegerField(default=1)
        name = peewee.CharField(max_length=200)
        email = peewee.CharField(max_length=200, unique=True)
        country = peewee.ForeignKeyField(Country, null=True, on_delete="RESTRICT")
        balance = peewee.IntegerField(default=0)

        class Meta:
            table_name = "account"
    with database.bind_ctx([Account], bind_refs=False, bind_backrefs=False):
        database.create_tables([Account])
        for name in ("Old One", "Old Two"):
            Account.create(id=uuid.uuid4(), name=name, email=f"{name[-3:].lower()}@example.com")


def test_migrate_puts_existing_rows_in_the_named_tenant(make_app, database_url, tmp_path,
                                                         capsys, monkeypatch):
    plain = make_app()
    single_tenant_accounts(plain.database)
    plain.database.close()
    assert run(database_url, tmp_path, "migrate") == 1      # rows, and no tenant for them
    assert "tenantId" in capsys.readouterr().out
    # A unique index becomes unique per tenant: dropping the old one is asked for.
    assert run(database_url, tmp_path, "migrate", "--tenant", "north") == 2
    assert "drop index account_email" in capsys.readouterr().out
    assert run(database_url, tmp_path, "migrate", "--tenant", "north",
               "--allow-destructive") == 0
    assert "tenant north added" not in capsys.readouterr().out     # the demo's tenant
    assert run(database_url, tmp_path, "migrate") == 0
    assert "nothing to do" in capsys.readouterr().out
    assert run(database_url, tmp_path, "tenant", "add", "east", "--name", "East") == 0
    assert run(database_url, tmp_path, "tenant", "add", "south") == 1      # the demo's too
    assert run(database_url, tmp_path, "tenant", "list") == 0
    assert capsys.readouterr().out.splitlines()[-3:] == ["east  East  enabled",
                                                         "north  North  enabled",
                                                         "south  South  enabled"]

    app = make_app({"svc.datasource.init-schema": False}, application=APPLICATION)
    for username, (tenant, roles) in USERS.items():
        app.users.add(username, PASSWORD, roles)
        User.update(tenantId=tenant).where(User.username == username).execute()
    client = Client(app)
    nora, sam = token(client, "nora"), token(client, "sam")
    rows = client.get("/rest/entities/Account", headers=nora).json
    assert sorted((row["name"], row["tenantId"]) for row in rows) == [
        ("Old One", "north"), ("Old Two", "north")]
    assert client.get("/rest/entities/Account", headers=sam).json == []
    # The email is unique per tenant now: south may use north's.
    assert client.post("/rest/entities/Account", headers=sam, json={
        "name": "S", "email": "one@example.com"}).status_code == 201

    assert run(database_url, tmp_path, "tenant", "disable", "south") == 0
    from restsvc.security import gate
    gate.RECHECK_SECONDS, kept = 0, gate.RECHECK_SECONDS
    try:
        assert client.get("/rest/entities/Account", headers=sam).status_code == 401
    finally:
        gate.RECHECK_SECONDS = kept
    assert run(database_url, tmp_path, "tenant", "disable", "west") == 1
    assert run(database_url, tmp_path, "tenant", "enable", "south") == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("stan-password\n"))
    assert run(database_url, tmp_path, "user", "add", "stan", "--tenant", "south",
               "--role", "rest-minimal", "--role", "accounts", "--password-stdin") == 0
    assert User.get(User.username == "stan").tenantId == "south"
    monkeypatch.setattr("sys.stdin", io.StringIO("wes-password\n"))
    assert run(database_url, tmp_path, "user", "add", "wes", "--tenant", "west",
               "--password-stdin") == 1
