"""GET /rest/version, the session's locale (PUT /rest/user-session/locale) and
messages of errors in the caller's language: Accept-Language, then the
session's (the user's) locale, then the default."""
import uuid

import pytest
from werkzeug.test import Client

from conftest import bearer, get_token, password_grant

MISSING = str(uuid.uuid4())


def _password_tokens(client, username="admin"):
    return password_grant(client, username, f"{username}-password").json


def test_version_names_restsvc_and_the_application(client, auth):
    import importlib.metadata
    assert client.get("/rest/version").status_code == 401
    response = client.get("/rest/version", headers=auth)
    assert response.status_code == 200
    assert response.json == {"restsvc": importlib.metadata.version("restsvc"), "application": "1.0"}


def test_version_needs_no_rest_enabled_policy(make_app):
    client = Client(make_app({"svc.authserver.client.reader.resource-roles": ""}))
    token = get_token(client, "reader", "reader-secret")
    assert client.get("/rest/entities/Customer", headers=bearer(token)).status_code == 403
    assert client.get("/rest/version", headers=bearer(token)).status_code == 200


def test_version_of_an_application_that_declares_none_is_null(make_app):
    import dataclasses

    from restsvc.demo import application as demo
    app = make_app(application=dataclasses.replace(demo, version=None))
    client = Client(app)
    body = client.get("/rest/version", headers=bearer(get_token(client))).json
    assert body["application"] is None


def test_session_locale_set_from_accept_language_holds_for_the_token(client):
    token = _password_tokens(client)["access_token"]
    assert client.get("/rest/userInfo", headers=bearer(token)).json["locale"] == "en"
    response = client.put("/rest/user-session/locale",
                          headers={**bearer(token), "Accept-Language": "de-DE,de;q=0.9"})
    assert response.status_code == 200
    assert response.json == {"username": "admin", "locale": "de"}
    assert client.get("/rest/userInfo", headers=bearer(token)).json["locale"] == "de"
    assert client.get("/rest/user-session", headers=bearer(token)).json == {
        "username": "admin", "locale": "de"}
    # Captions follow the session's locale; Accept-Language still wins.
    captions = client.get("/rest/messages/entities/Customer", headers=bearer(token)).json
    assert captions["Customer"] == "Kunde"
    captions = client.get("/rest/messages/entities/Customer",
                          headers={**bearer(token), "Accept-Language": "en"}).json
    assert captions["Customer"] == "Customer"


def test_session_locale_from_a_body_and_refreshed_tokens_keep_it(client):
    tokens = _password_tokens(client)
    response = client.put("/rest/user-session/locale", json={"locale": "de"},
                          headers=bearer(tokens["access_token"]))
    assert response.status_code == 200 and response.json["locale"] == "de"
    refreshed = client.post("/oauth2/token", data={"grant_type": "refresh_token",
                                                   "refresh_token": tokens["refresh_token"]},
                            headers={"Authorization": "Basic ZGVtby1jbGllbnQ6ZGVtby1zZWNyZXQ="})
    assert refreshed.status_code == 200, refreshed.json
    info = client.get("/rest/userInfo", headers=bearer(refreshed.json["access_token"])).json
    assert info["locale"] == "de"
    # Another sign-in of the same user is another session: the user's locale.
    other = _password_tokens(client)["access_token"]
    assert client.get("/rest/userInfo", headers=bearer(other)).json["locale"] == "en"


def test_a_client_credentials_token_is_its_own_session(client):
    token = get_token(client)
    response = client.put("/rest/user-session/locale", json={"locale": "de"},
                          headers=bearer(token))
    assert response.status_code == 200
    assert client.get("/rest/userInfo", headers=bearer(token)).json["locale"] == "de"
    assert client.get("/rest/userInfo", headers=bearer(get_token(client))).json["locale"] == "en"


@pytest.mark.parametrize("kwargs, details", [
    ({"headers": {"Accept-Language": "fr"}}, "Locale 'fr' is not one of the available locales (en, de)"),
    ({"json": {"locale": "fr"}}, "Locale 'fr' is not one of the available locales (en, de)"),
    ({"json": {"language": "de"}}, 'The body must be {"locale": "<language>"}'),
    ({}, 'Name the locale: {"locale": "<language>"} or Accept-Language'),
])
def test_an_unavailable_or_missing_locale_is_refused(client, auth, kwargs, details):
    headers = {**auth, **kwargs.pop("headers", {})}
    response = client.put("/rest/user-session/locale", headers=headers, **kwargs)
    assert response.status_code == 422
    assert response.json == {"error": "Could not change user session locale", "details": details}


def test_changing_the_locale_needs_a_token(client):
    response = client.put("/rest/user-session/locale", json={"locale": "de"})
    assert response.status_code == 401


def test_error_details_in_the_callers_language(client, auth):
    path = f"/rest/entities/Customer/{MISSING}"
    english = client.get(path, headers=auth)
    assert english.json == {"error": "Entity not found",
                            "details": f"Entity Customer with id {MISSING} not found"}
    german = client.get(path, headers={**auth, "Accept-Language": "de"})
    assert german.status_code == 404
    assert german.json == {"error": "Entity not found",
                           "details": f"Customer mit der ID {MISSING} wurde nicht gefunden"}
    # The English answer is the same bytes as without any language asked for.
    assert client.get(path, headers={**auth, "Accept-Language": "en"}).data == english.data


def test_validation_messages_in_the_users_language(client):
    """alice's locale is de: her messages are German unless she asks otherwise."""
    token = password_grant(client).json["access_token"]
    response = client.post("/rest/entities/Customer", json={"email": "x@example.com"},
                           headers=bearer(token))
    # alice may only read customers: the refusal is in German too.
    assert response.status_code == 403
    assert response.json == {"error": "Creation forbidden",
                             "details": "Anlegen von Customer ist nicht erlaubt"}


def test_validation_messages_follow_accept_language(client, auth):
    body = {"name": "x" * 300}
    english = client.post("/rest/entities/Customer", json=body, headers=auth)
    german = client.post("/rest/entities/Customer", json=body,
                         headers={**auth, "Accept-Language": "de"})
    assert english.status_code == german.status_code == 400
    assert english.json[0]["message"] == "size must be between 0 and 200"
    assert german.json[0] == {**english.json[0], "message": "Größe muss zwischen 0 und 200 sein"}
    missing = client.post("/rest/entities/Order", json={},
                          headers={**auth, "Accept-Language": "de"}).json
    assert {item["message"] for item in missing} == {"darf nicht null sein"}


def test_the_session_locale_applies_to_errors_and_accept_language_wins(client):
    token = _password_tokens(client)["access_token"]
    client.put("/rest/user-session/locale", json={"locale": "de"}, headers=bearer(token))
    path = f"/rest/entities/Customer/{MISSING}"
    assert "wurde nicht gefunden" in client.get(path, headers=bearer(token)).json["details"]
    english = client.get(path, headers={**bearer(token), "Accept-Language": "en"}).json
    assert english["details"] == f"Entity Customer with id {MISSING} not found"


def test_an_application_bundle_overrides_restsvc_messages(make_app, tmp_path):
    import shutil
    from pathlib import Path
    messages = tmp_path / "messages"
    shutil.copytree(Path(__file__).parent.parent / "config" / "messages", messages)
    with open(messages / "de.yaml", "a", encoding="utf-8") as bundle:
        bundle.write('\nrestsvc.message.entityNotFound: "Kein {entity} {id}"\n')
    client = Client(make_app({"svc.core.messages-dir": str(messages)}))
    response = client.get(f"/rest/entities/Customer/{MISSING}",
                          headers={**bearer(get_token(client)), "Accept-Language": "de"})
    assert response.json["details"] == f"Kein Customer {MISSING}"
