"""The typed test application (tests/typed_app.py): it uses every public name,
and it runs: its service, row rule and endpoint answer as declared."""
import ast
from pathlib import Path

import pytest
from werkzeug.test import Client

import restsvc
import typed_app
from conftest import bearer, password_grant

SOURCE = Path(typed_app.__file__)


def test_the_typed_application_uses_every_public_name():
    imported = {alias.name for node in ast.walk(ast.parse(SOURCE.read_text()))
                if isinstance(node, ast.ImportFrom) and node.module == "restsvc"
                for alias in node.names}
    used = {node.id for node in ast.walk(ast.parse(SOURCE.read_text())) if isinstance(node, ast.Name)}
    assert imported == set(restsvc.__all__), "tests/typed_app.py must import every public name"
    assert imported <= used, f"imported but not used: {sorted(imported - used)}"


@pytest.fixture
def typed_client(make_app):
    return Client(make_app(application=typed_app.application))


@pytest.fixture
def typed_auth(typed_client):
    answer = password_grant(typed_client, "typed", "typed-password")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return bearer(answer.json["access_token"])


def test_the_typed_application_serves_its_service_and_endpoint(typed_client, typed_auth):
    created = typed_client.post("/rest/services/typedNotes/create", headers=typed_auth, json={
        "title": "Buy cable", "attachment": "fs://2024/01/31/a.png?name=a.png"})
    assert created.status_code == 200, created.get_data(as_text=True)
    note = created.json
    assert (note["title"], note["priority"], note["titleLength"]) == ("Buy cable (typed)", "HIGH", 17)
    assert note["place"] == {"room": "A1", "floor": 1}
    assert note["attachment"] == "fs://2024/01/31/a.png?name=a.png"

    count = typed_client.get("/rest/services/typedNotes/count", headers=typed_auth)
    assert (count.status_code, count.get_data(as_text=True)) == (200, "1")
    titles = typed_client.get("/rest/services/typedNotes/titles", headers=typed_auth)
    assert titles.json == ["Buy cable (typed)"]

    card = typed_client.get(f"/api/notes/{note['id']}", headers=typed_auth)
    assert card.status_code == 200, card.get_data(as_text=True)
    assert card.get_data(as_text=True) == "Buy cable (typed) [typed, en]\n"
    # The row rule's predicate lets the note's author delete it.
    deleted = typed_client.delete(f"/rest/entities/TypedNote/{note['id']}", headers=typed_auth)
    assert deleted.status_code == 204, deleted.get_data(as_text=True)


def test_the_typed_application_errors_and_validators(typed_client, typed_auth):
    for kind, status in (("bad", 400), ("conflict", 409), ("forbidden", 403), ("missing", 404),
                         ("unknown", 400)):
        answer = typed_client.post("/rest/services/typedNotes/fail", headers=typed_auth,
                                   json={"kind": kind})
        assert answer.status_code == status, (kind, answer.get_data(as_text=True))
    blank = typed_client.post("/rest/entities/TypedNote", headers=typed_auth, json={"title": " "})
    assert blank.status_code == 400
    assert [v["path"] for v in blank.json] == ["title"]
    reserved = typed_client.post("/rest/entities/TypedNote", headers=typed_auth,
                                 json={"title": "Reserved"})
    assert reserved.status_code == 400
    assert [(v["path"], v["message"]) for v in reserved.json] == [("title", "this title is reserved")]
    assert typed_client.get("/rest/entities/TypedNote", headers=typed_auth).json == []
    # The user's roles do not grant the demo's entities.
    assert typed_client.get("/rest/entities/Customer", headers=typed_auth).status_code == 403
