"""``restsvc new DIR``: an application of one's own, served at once."""
import json
import re
import uuid
from contextlib import contextmanager

from bundle_support import bundle_database, serving_bundle
from conftest import PG_URL, basic, bearer, close_app, postgres_schema
from werkzeug.test import Client

from restsvc import create_app
from restsvc.cli import main
from restsvc.settings import load_settings


def new_app(directory, capsys):
    """Run ``restsvc new`` with a module name of its own (tests share one process)."""
    module = f"starter_{uuid.uuid4().hex[:8]}_app"
    assert main(["new", str(directory), "--module", module]) == 0
    out = capsys.readouterr().out
    client_id = re.search(r"client id:\s+(\S+)", out).group(1)
    secret = re.search(r"client secret:\s+(\S+)", out).group(1)
    return client_id, secret


@contextmanager
def database(tmp_path):
    if not PG_URL:
        yield {"RESTSVC_DATA_DIR": str(tmp_path / "data")}
        return
    with postgres_schema("restsvc_starter") as url:
        yield {"RESTSVC_DATA_DIR": str(tmp_path / "data"), "RESTSVC_DATABASE_URL": url}


@contextmanager
def served(tmp_path, capsys):
    """A new application ``notes``, built, and a token of its client: (client, auth)."""
    directory = tmp_path / "notes"
    client_id, secret = new_app(directory, capsys)
    with database(tmp_path) as environ:
        app = create_app(load_settings(directory / "restsvc.yaml", environ=environ))
        try:
            client = Client(app)
            answer = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                                 headers={"Authorization": basic(client_id, secret)})
            assert answer.status_code == 200, answer.get_data(as_text=True)
            yield client, bearer(answer.json["access_token"])
        finally:
            close_app(app)


def test_new_app_serves_its_entity_with_its_client(tmp_path, capsys):
    with served(tmp_path, capsys) as (client, auth):
        created = client.post("/rest/entities/Note", json={"title": "Buy milk"}, headers=auth)
        assert created.status_code == 201, created.get_data(as_text=True)
        listed = client.get("/rest/entities/Note", headers=auth)
        assert [note["title"] for note in listed.json] == ["Buy milk"]
        missing = client.post("/rest/entities/Note", json={"text": "no title"}, headers=auth)
        assert missing.status_code == 400 and missing.json[0]["path"] == "title"
        # Its role grants notes and nothing else.
        assert client.get("/rest/entities/User", headers=auth).status_code == 403
        german = client.get("/rest/messages/entities/Note",
                            headers={**auth, "Accept-Language": "de"})
        assert german.json["Note.done"] == "Erledigt"


def test_new_apps_documents_carry_its_own_name_and_version(tmp_path, capsys):
    """A client generated from the OpenAPI document is named after the
    application, not ``restsvc_project_rest_api_client``."""
    with served(tmp_path, capsys) as (client, auth):
        document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
        assert (document["info"]["title"], document["info"]["version"]) == ("notes API", "0.1.0")
        public = client.get("/rest/docs/assets/openapiPublic.json").json
        assert public["info"]["title"] == "notes API"


def test_new_app_keeps_only_the_hash_of_the_client_secret(tmp_path, capsys):
    directory = tmp_path / "notes"
    _, secret = new_app(directory, capsys)
    settings = directory / "restsvc.yaml"
    for path in directory.rglob("*"):
        assert not path.is_file() or secret not in path.read_text()
    assert settings.stat().st_mode & 0o077 == 0


def test_new_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep me")
    assert main(["new", str(tmp_path)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert [path.name for path in tmp_path.iterdir()] == ["mine.txt"]


def test_new_refuses_a_module_name_that_is_taken(tmp_path, capsys):
    assert main(["new", str(tmp_path / "x"), "--module", "json"]) == 1
    assert "already importable" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_new_app_bundled_runs_under_gunicorn_on_a_plain_interpreter(tmp_path, capsys):
    directory = tmp_path / "shop"
    client = new_app(directory, capsys)
    bundle = tmp_path / "shop.pyz"
    assert main(["--config", str(directory / "restsvc.yaml"), "bundle",
                 "--output", str(bundle)]) == 0
    clean = tmp_path / "clean"
    clean.mkdir()
    with bundle_database(bundle) as env, serving_bundle(bundle, clean, env, client) as server:
        status, body = server.request("POST", "/rest/entities/Note",
                                      json.dumps({"title": "From the bundle"}).encode(),
                                      {"Content-Type": "application/json"})
        assert status == 201, body
        status, body = server.request("GET", "/rest/entities/Note")
        assert [note["title"] for note in json.loads(body)] == ["From the bundle"]
