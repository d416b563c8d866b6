"""The service as a whole: embedding, schema set-up, connections, errors, CLI, gunicorn."""
import json
import os

import pytest
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client
from werkzeug.wrappers import Response

from conftest import basic, get_token, http, http_form
from restsvc.cli import main as cli
from restsvc.demo.model import Customer, Order, OrderLine, Product
from restsvc.security.clients import verify_secret


def test_app_mounts_under_a_prefix_in_a_host_application(app):
    host = DispatcherMiddleware(lambda e, s: Response("host")(e, s), {"/api": app})
    c = Client(host)
    token = get_token_at(c, "/api/oauth2/token")
    response = c.get("/api/rest/metadata/entities/Order", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.json["entityName"] == "Order"
    assert c.get("/api/rest/metadata/entities/Order").status_code == 401
    assert c.get("/other").get_data(as_text=True) == "host"


def get_token_at(c, path):
    response = c.post(path, data={"grant_type": "client_credentials"},
                      headers={"Authorization": basic("demo-client", "demo-secret")})
    return response.json["access_token"]


def test_demo_data_is_loaded_once(app, make_app):
    counts = lambda: [m.select().count() for m in (Customer, Product, Order, OrderLine)]  # noqa: E731
    first = counts()
    assert first[:3] == [20, 10, 50] and first[3] >= 50
    make_app({"svc.demo-data": True})      # starting again changes nothing
    assert counts() == first


def test_starting_on_an_empty_sqlite_file_creates_the_schema(tmp_path):
    from conftest import make_settings
    from restsvc.app import RestApp
    if os.environ.get("RESTSVC_TEST_DATABASE_URL"):
        pytest.skip("SQLite-specific")
    settings = make_settings(f"sqlite:///{tmp_path}/new/fresh.db", tmp_path)
    c = Client(RestApp(settings))
    token = get_token(c)      # needs the token table
    assert c.get("/rest/metadata/enums", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_an_unexpected_error_is_a_json_500_and_the_connection_is_given_back(app, client, auth, caplog):
    original = app.tokens.find_hash

    def broken(token_hash):
        original(token_hash)           # touches the database
        app.database.execute_sql("SELECT 1")
        raise RuntimeError("secret internals")
    app.tokens.find_hash = broken
    response = client.get("/rest/metadata/enums", headers=auth)
    assert response.status_code == 500
    assert response.json == {"error": "Server error",
                             "details": f"Request id {response.headers['X-Request-Id']}"}
    assert "secret internals" not in response.get_data(as_text=True)
    assert "secret internals" in caplog.text
    assert not app.database.in_transaction()
    if hasattr(app.database, "counts"):      # PostgreSQL pool: none serving a request
        assert app.database.counts()[0] == 0


def test_pooled_connections_are_given_back_after_each_request(app, client, auth):
    for _ in range(3):
        assert client.get("/rest/metadata/enums", headers=auth).status_code == 200
    if hasattr(app.database, "counts"):
        assert app.database.counts() == (0, 1)      # the one this thread used, idle
    else:
        assert not app.database.in_transaction()


def test_cli_hash_secret_prints_a_verifiable_hash(capsys):
    assert cli(["hash-secret", "s3cret"]) == 0
    hashed = capsys.readouterr().out.strip()
    assert hashed.startswith("{pbkdf2-sha256}")
    assert verify_secret(hashed, "s3cret") and not verify_secret(hashed, "other")


def test_cli_routes_lists_the_url_table(capsys):
    assert cli(["routes"]) == 0
    out = capsys.readouterr().out
    assert "/oauth2/token" in out and "/rest/metadata/entities/<entity_name>" in out


def test_cli_reports_configuration_errors_without_a_traceback(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("svc:\n  secret-key: a-long-enough-secret\n  rest:\n    max-file-size: huge\n")
    assert cli(["--config", str(path), "initdb"]) == 2
    err = capsys.readouterr().err
    assert "svc.rest.max-file-size" in err and "Traceback" not in err


def test_cli_initdb_is_idempotent(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text(f"svc:\n  secret-key: a-long-enough-secret\n"
                    f"  application: restsvc.demo:application\n"
                    f"  datasource:\n    url: sqlite:///{tmp_path}/db/x.db\n")
    assert cli(["--config", str(path), "initdb"]) == 0
    assert cli(["--config", str(path), "initdb"]) == 0
    assert cli(["--config", str(path), "demo-data"]) == 0
    assert "demo data ready" in capsys.readouterr().out


def test_restsvc_serve_runs_the_demo_under_gunicorn(start_servers):
    base, = start_servers(1, workers=2)
    status, body = http_form(f"{base}/oauth2/token", {"grant_type": "client_credentials"})
    assert status == 200
    headers = {"Authorization": f"Bearer {body['access_token']}", "Accept-Language": "de"}
    for _ in range(4):      # both workers see the token
        status, body = http("GET", f"{base}/rest/messages/entities/Order", headers=headers)
        assert status == 200 and json.loads(body)["Order"] == "Bestellung"
