"""POST /oauth2/token with grant_type=password and grant_type=refresh_token."""
import pytest
from werkzeug.test import Client

from conftest import basic, bearer, cpu_seconds, password_grant
from restsvc.security import clients
from restsvc.security.users import User


def refresh_grant(client, refresh_token, client_id="demo-client", secret="demo-secret"):
    return client.post("/oauth2/token",
                       data={"grant_type": "refresh_token", "refresh_token": refresh_token},
                       headers={"Authorization": basic(client_id, secret)})


def test_password_grant_issues_an_access_and_a_refresh_token(client):
    response = password_grant(client)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert list(body) == ["access_token", "refresh_token", "token_type", "expires_in"]
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert body["access_token"] != body["refresh_token"]
    assert client.get("/rest/userInfo", headers=bearer(body["access_token"])).status_code == 200


def test_no_refresh_token_when_the_client_may_not_refresh(make_app):
    app = make_app({"svc.authserver.client.demo.authorization-grant-types": "password"})
    body = password_grant(Client(app)).json
    assert set(body) == {"access_token", "token_type", "expires_in"}


def test_client_credentials_never_get_a_refresh_token(client):
    response = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert "refresh_token" not in response.json


def test_password_grant_needs_a_client_that_allows_it(client):
    response = password_grant(client, client_id="reader", secret="reader-secret")
    assert response.status_code == 400
    assert response.json["error"] == "unauthorized_client"


@pytest.mark.parametrize("missing", ["username", "password"])
def test_missing_username_or_password_is_invalid_request(client, missing):
    data = {"grant_type": "password", "username": "alice", "password": "alice-password"}
    del data[missing]
    response = client.post("/oauth2/token", data=data,
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert response.status_code == 400
    assert response.json == {"error": "invalid_request",
                             "error_description": f"OAuth 2.0 Parameter: {missing}"}


@pytest.mark.parametrize("username, password", [
    ("alice", "wrong-password"), ("nobody", "alice-password"), ("alice", "ALICE-PASSWORD")])
def test_bad_user_credentials_are_invalid_grant(client, username, password):
    response = password_grant(client, username, password)
    assert response.status_code == 400
    assert response.json == {"error": "invalid_grant", "error_description": "Bad credentials"}


def test_an_inactive_user_gets_bad_credentials_too(client):
    User.update(active=False).where(User.username == "alice").execute()
    response = password_grant(client)
    assert response.status_code == 400
    assert response.json == {"error": "invalid_grant", "error_description": "Bad credentials"}


def test_a_user_without_a_password_cannot_sign_in(client):
    User.update(password=None).where(User.username == "alice").execute()
    assert password_grant(client, password="").json["error"] == "invalid_request"
    assert password_grant(client).json["error"] == "invalid_grant"


def test_a_password_token_carries_the_users_roles_not_the_clients(client):
    # demo-client has system-full-access; alice only rest-minimal, sales-reader
    # and the public-tags rule.
    token = password_grant(client).json["access_token"]
    body = client.get("/rest/permissions", headers=bearer(token)).json
    assert body["authorities"] == ["ROLE_rest-minimal", "ROLE_sales-reader",
                                   "ROW_LEVEL_ROLE_public-tags"]


def test_refresh_grant_issues_a_new_access_token_and_reuses_the_refresh_token(client):
    first = password_grant(client).json
    response = refresh_grant(client, first["refresh_token"])
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert body["refresh_token"] == first["refresh_token"]
    assert body["access_token"] != first["access_token"]
    info = client.get("/rest/userInfo", headers=bearer(body["access_token"])).json
    assert info["username"] == "alice" and info["locale"] == "de"


def test_a_refresh_token_is_bound_to_its_client(make_app):
    app = make_app({"svc.authserver.client.reader.authorization-grant-types":
                    "client_credentials, refresh_token"})
    c = Client(app)
    refresh_token = password_grant(c).json["refresh_token"]
    response = refresh_grant(c, refresh_token, "reader", "reader-secret")
    assert response.status_code == 400
    assert response.json["error"] == "invalid_grant"
    assert refresh_grant(c, refresh_token).status_code == 200


@pytest.mark.parametrize("kind", ["unknown", "access token"])
def test_an_invalid_refresh_token_is_invalid_grant(client, kind):
    token = "no-such-token" if kind == "unknown" else password_grant(client).json["access_token"]
    response = refresh_grant(client, token)
    assert response.status_code == 400
    assert response.json["error"] == "invalid_grant"


def test_missing_refresh_token_is_invalid_request(client):
    response = client.post("/oauth2/token", data={"grant_type": "refresh_token"},
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert response.json == {"error": "invalid_request",
                             "error_description": "OAuth 2.0 Parameter: refresh_token"}


def test_a_refresh_token_is_not_a_bearer_token(client):
    refresh_token = password_grant(client).json["refresh_token"]
    assert client.get("/rest/userInfo", headers=bearer(refresh_token)).status_code == 401


def test_the_refresh_token_lives_as_long_as_the_client_says(client, app):
    refresh_token = password_grant(client).json["refresh_token"]
    info = app.tokens.lookup(refresh_token, "refresh")
    assert info.expires_at - info.issued_at == 8 * 3600



def test_a_failure_takes_as_long_for_an_unknown_user_as_for_a_known_one(make_app, monkeypatch):
    # The hashing cost was raised after alice's password was hashed (the demo
    # data uses the suite's low cost): neither her cheaper hash nor an inactive
    # or unknown user may answer faster than the others.
    c = Client(make_app({"svc.authserver.rate-limit.max-failures": 0}))
    User.update(active=False).where(User.username == "admin").execute()
    monkeypatch.setattr(clients, "ITERATIONS", 100_000)
    times = cpu_seconds({name: lambda name=name: password_grant(c, name, "wrong-password")
                         for name in ("alice", "admin", "nobody")})
    assert max(times.values()) < 2.5 * min(times.values()), times
    assert password_grant(c, "alice", "alice-password").status_code == 200
