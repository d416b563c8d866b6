"""POST /oauth2/revoke (RFC 7009) and POST /oauth2/introspect (RFC 7662)."""
import time

import pytest

from conftest import basic, bearer, get_token, password_grant
from restsvc.security import tokens

DEMO = ("demo-client", "demo-secret")
READER = ("reader", "reader-secret")


def revoke(client, token, auth=DEMO, **extra):
    return client.post("/oauth2/revoke", data={"token": token, **extra},
                       headers={"Authorization": basic(*auth)} if auth else {})


def introspect(client, token, auth=DEMO):
    return client.post("/oauth2/introspect", data={"token": token},
                       headers={"Authorization": basic(*auth)} if auth else {})


def works(client, token):
    return client.get("/rest/userInfo", headers=bearer(token)).status_code == 200


def test_revoking_an_access_token_ends_it(client):
    token = get_token(client)
    response = revoke(client, token)
    assert response.status_code == 200
    assert response.get_data() == b""
    assert response.headers["Cache-Control"] == "no-store"
    assert not works(client, token)


def test_revoking_a_refresh_token_ends_its_access_tokens_too(client):
    body = password_grant(client).json
    other = password_grant(client).json["access_token"]     # a second sign-in of alice
    assert revoke(client, body["refresh_token"], token_type_hint="refresh_token").status_code == 200
    assert not works(client, body["access_token"])
    assert works(client, other)
    refreshed = client.post("/oauth2/token", data={"grant_type": "refresh_token",
                                                   "refresh_token": body["refresh_token"]},
                            headers={"Authorization": basic(*DEMO)})
    assert refreshed.json["error"] == "invalid_grant"


def test_revoking_an_access_token_with_a_wrong_hint_still_works(client):
    token = get_token(client)
    assert revoke(client, token, token_type_hint="refresh_token").status_code == 200
    assert not works(client, token)


def test_revoking_an_unknown_token_is_200(client):
    response = revoke(client, "no-such-token")
    assert response.status_code == 200 and response.get_data() == b""


def test_a_client_cannot_revoke_another_clients_token(client):
    token = get_token(client)
    assert revoke(client, token, auth=READER).status_code == 200
    assert works(client, token)


@pytest.mark.parametrize("endpoint", ["/oauth2/revoke", "/oauth2/introspect"])
def test_revoke_and_introspect_need_client_authentication(client, endpoint):
    token = get_token(client)
    response = client.post(endpoint, data={"token": token})
    assert response.status_code == 401 and response.json["error"] == "invalid_client"
    response = client.post(endpoint, data={"token": token},
                           headers={"Authorization": basic("demo-client", "wrong")})
    assert response.status_code == 401
    assert works(client, token)


@pytest.mark.parametrize("endpoint", ["/oauth2/revoke", "/oauth2/introspect"])
def test_revoke_and_introspect_need_the_token_parameter(client, endpoint):
    response = client.post(endpoint, data={}, headers={"Authorization": basic(*DEMO)})
    assert response.status_code == 400
    assert response.json == {"error": "invalid_request",
                             "error_description": "OAuth 2.0 Parameter: token"}


def test_introspecting_a_client_token(client):
    before = int(time.time())
    token = get_token(client)
    response = introspect(client, token)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert body["active"] is True and body["token_type"] == "Bearer"
    assert body["client_id"] == "demo-client" and body["username"] == "demo-client"
    assert before <= body["iat"] <= body["exp"] - 3600 + 1


def test_introspecting_a_user_token_names_the_user(client):
    body = introspect(client, password_grant(client).json["access_token"]).json
    assert body["active"] is True
    assert (body["client_id"], body["username"], body["sub"]) == ("demo-client", "alice", "alice")


def test_introspecting_a_refresh_token(client):
    body = introspect(client, password_grant(client).json["refresh_token"]).json
    assert body["active"] is True and body["username"] == "alice" and "token_type" not in body


def test_unknown_and_revoked_tokens_are_inactive(client):
    token = get_token(client)
    revoke(client, token)
    assert introspect(client, token).json == {"active": False}
    assert introspect(client, "no-such-token").json == {"active": False}


def test_another_clients_token_is_inactive_for_introspection(client):
    token = get_token(client)
    assert introspect(client, token, auth=READER).json == {"active": False}
    assert introspect(client, token).json["active"] is True


def test_an_expired_token_is_inactive(client, monkeypatch):
    token = get_token(client)
    later = time.time() + 3601
    monkeypatch.setattr(tokens.time, "time", lambda: later)
    assert introspect(client, token).json == {"active": False}


def test_expired_tokens_are_purged_as_new_ones_are_issued(app, client, monkeypatch):
    get_token(client)
    later = time.time() + 7200
    monkeypatch.setattr(tokens.time, "time", lambda: later)
    for _ in range(tokens.PURGE_EVERY):
        get_token(client)
    assert all(row.expires_at > later for row in tokens.StoredToken.select())
