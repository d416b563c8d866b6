"""POST /oauth2/token: client credentials, RFC 6749 errors."""
import time

import pytest
from werkzeug.test import Client

from conftest import basic, cpu_seconds, get_token
from restsvc.security import tokens
from restsvc.security.clients import hash_secret

GRANT = {"grant_type": "client_credentials"}


def post_token(client, data=None, auth=("demo-client", "demo-secret"), **kwargs):
    headers = {"Authorization": basic(*auth)} if auth else {}
    return client.post("/oauth2/token", data=GRANT if data is None else data, headers=headers,
                       **kwargs)


def test_client_credentials_issue_an_opaque_bearer_token(client):
    response = post_token(client)
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert len(body["access_token"]) >= 40


def test_credentials_in_the_form_body_work_too(client):
    response = post_token(client, data={**GRANT, "client_id": "reader",
                                        "client_secret": "reader-secret"}, auth=None)
    assert response.status_code == 200


def test_the_database_keeps_only_a_hash_of_the_token(client, app):
    token = get_token(client)
    stored = [row.token_hash for row in tokens.StoredToken.select()]
    assert token not in stored
    assert app.tokens.hash(token) in stored


@pytest.mark.parametrize("auth", [("demo-client", "wrong"), ("nobody", "demo-secret")])
def test_bad_client_credentials_are_invalid_client(client, auth):
    response = post_token(client, auth=auth)
    assert response.status_code == 401
    assert response.json["error"] == "invalid_client"
    assert response.headers["WWW-Authenticate"] == 'Basic realm="restsvc"'
    assert "demo-secret" not in response.get_data(as_text=True)


def test_missing_client_authentication_is_invalid_client(client):
    response = post_token(client, auth=None)
    assert response.status_code == 401
    assert response.json["error"] == "invalid_client"


@pytest.mark.parametrize("header", ["Basic %%%", "Basic 💥", "Basic " + "x" * 5001])
def test_malformed_basic_header_is_invalid_client(client, header):
    response = client.post("/oauth2/token", data=GRANT, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.json["error"] == "invalid_client"


def test_missing_grant_type_is_invalid_request(client):
    response = post_token(client, data={})
    assert response.status_code == 400
    assert response.json == {"error": "invalid_request",
                             "error_description": "OAuth 2.0 Parameter: grant_type"}


def test_unknown_grant_type_is_unsupported(client):
    response = post_token(client, data={"grant_type": "urn:example:magic"})
    assert response.status_code == 400
    assert response.json["error"] == "unsupported_grant_type"


def test_a_grant_the_client_may_not_use_is_unauthorized_client(make_app):
    from werkzeug.test import Client
    app = make_app({"svc.authserver.client.demo.authorization-grant-types": "password"})
    response = post_token(Client(app))
    assert response.status_code == 400
    assert response.json["error"] == "unauthorized_client"


def test_repeated_parameters_are_invalid_request(client):
    response = client.post("/oauth2/token", data="grant_type=client_credentials&grant_type=x",
                           content_type="application/x-www-form-urlencoded",
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert response.status_code == 400
    assert response.json["error"] == "invalid_request"


def test_a_json_body_is_invalid_request(client):
    response = client.post("/oauth2/token", json=GRANT,
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert response.status_code == 400
    assert response.json["error"] == "invalid_request"


def test_get_on_the_token_endpoint_is_405(client):
    response = client.get("/oauth2/token")
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"
    assert response.json["error"] == "Method not allowed"
    assert response.headers["Cache-Control"] == "no-store"


def test_a_hashed_client_secret_from_hash_secret_works(make_app):
    app = make_app({"svc.authserver.client.demo.client-secret": hash_secret("s3cret!", iterations=1000)})
    c = Client(app)
    assert post_token(c, auth=("demo-client", "s3cret!")).status_code == 200
    assert post_token(c, auth=("demo-client", "demo-secret")).status_code == 401


def test_an_expired_token_is_refused(client, auth, monkeypatch):
    assert client.get("/rest/metadata/enums", headers=auth).status_code == 200
    later = time.time() + 3601
    monkeypatch.setattr(tokens.time, "time", lambda: later)
    response = client.get("/rest/metadata/enums", headers=auth)
    assert response.status_code == 401
    assert response.json["error"] == "invalid_token"


ERRORS = [  # (form, credentials, status, error)
    (GRANT, ("demo-client", "wrong"), 401, "invalid_client"),
    ({}, ("demo-client", "demo-secret"), 400, "invalid_request"),
    ({"grant_type": "magic"}, ("demo-client", "demo-secret"), 400, "unsupported_grant_type"),
    ({"grant_type": "password", "username": "alice", "password": "wrong"},
     ("demo-client", "demo-secret"), 400, "invalid_grant"),
    ({**GRANT, "scope": "openid"}, ("demo-client", "demo-secret"), 400, "invalid_scope"),
]


@pytest.mark.parametrize("form, auth, status, error", ERRORS)
def test_error_answers_are_never_cached(client, form, auth, status, error):
    response = post_token(client, data=form, auth=auth)
    assert (response.status_code, response.json["error"]) == (status, error)
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"


@pytest.mark.parametrize("endpoint", ["/oauth2/revoke", "/oauth2/introspect"])
def test_revoke_and_introspect_errors_are_never_cached(client, endpoint):
    response = client.post(endpoint, data={"token": "x"},
                           headers={"Authorization": basic("demo-client", "wrong")})
    assert response.status_code == 401
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"


def test_an_oversized_token_request_is_an_oauth_error(client):
    response = post_token(client, data={**GRANT, "pad": "x" * (11 << 20)})
    assert response.status_code == 413
    assert response.json["error"] == "invalid_request"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("grant", [GRANT, {"grant_type": "password", "username": "alice",
                                           "password": "alice-password"}])
def test_a_requested_scope_is_refused_as_invalid_scope_not_ignored(client, grant):
    response = post_token(client, data={**grant, "scope": "read write"})
    assert response.status_code == 400
    assert response.json["error"] == "invalid_scope"
    assert "access_token" not in response.json


def test_an_empty_scope_parameter_asks_for_nothing(client):
    response = post_token(client, data={**GRANT, "scope": ""})
    assert response.status_code == 200
    assert "scope" not in response.json


def test_a_failure_takes_as_long_for_an_unknown_client_as_for_a_known_one(make_app):
    # A plain secret, a hashed one and an unknown id: an attacker timing the
    # failures must not learn which ids exist.
    hashed = {"svc.authserver.client.hashed.client-id": "hashed",
              "svc.authserver.client.hashed.client-secret": hash_secret("h", iterations=100_000),
              "svc.authserver.rate-limit.max-failures": 0}
    c = Client(make_app(hashed))
    times = cpu_seconds({name: lambda name=name: post_token(c, auth=(name, "wrong"))
                         for name in ("demo-client", "hashed", "nobody")})
    assert max(times.values()) < 2.5 * min(times.values()), times
