"""Registered scopes narrow a token's roles; RFC 8414 metadata lists what is enabled."""
from werkzeug.test import Client

from conftest import basic, bearer, get_token
from signin_support import code_for, exchange, pkce_pair

WEB = {"Authorization": basic("demo-web", "demo-web-secret")}
WEB_REDIRECT = "http://127.0.0.1/callback"


def admin_token(client, scope=None):
    """A demo-web token of the full-access user admin, for ``scope``."""
    verifier, challenge = pkce_pair()
    extra = {"scope": scope} if scope else {}
    code = code_for(client, challenge, client_id="demo-web", redirect_uri=WEB_REDIRECT,
                    username="admin", password="admin-password", **extra)
    answer = exchange(client, code, verifier, redirect_uri=WEB_REDIRECT, headers=WEB)
    assert answer.status_code == 200, answer.json
    return answer.json


def create_customer(client, token):
    return client.post("/rest/entities/Customer", json={"name": "Scoped", "email": "s@x.example"},
                       headers=bearer(token))


def test_read_token_cannot_write_even_for_a_full_access_user(client):
    tokens = admin_token(client, "read")
    assert tokens["scope"] == "read"
    assert client.get("/rest/entities/Customer", headers=bearer(tokens["access_token"])
                      ).status_code == 200
    assert create_customer(client, tokens["access_token"]).status_code == 403
    permissions = client.get("/rest/permissions", headers=bearer(tokens["access_token"])).json
    values = {item["target"]: item["value"] for item in permissions["entities"]}
    assert values["Customer:read"] == 1 and values["Customer:create"] == 0


def test_without_a_scope_parameter_all_registered_scopes_are_granted(client):
    tokens = admin_token(client)
    assert tokens["scope"] == "read write"
    assert create_customer(client, tokens["access_token"]).status_code == 201


def test_write_token_cannot_read(client):
    tokens = admin_token(client, "write")
    assert client.get("/rest/entities/Customer", headers=bearer(tokens["access_token"])
                      ).status_code == 403


def test_scope_outside_the_registered_ones_is_invalid_scope(client):
    from signin_support import authorize_params, query
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize", query_string=authorize_params(
        challenge, client_id="demo-web", redirect_uri=WEB_REDIRECT, scope="read admin"))
    assert query(answer.headers["Location"])["error"] == "invalid_scope"


def test_refresh_may_narrow_but_not_widen_the_scope(client):
    tokens = admin_token(client, "read")
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    wider = client.post("/oauth2/token", data={**data, "scope": "read write"}, headers=WEB)
    assert wider.status_code == 400 and wider.json["error"] == "invalid_scope"
    same = client.post("/oauth2/token", data=data, headers=WEB)
    assert same.status_code == 200 and same.json["scope"] == "read"
    assert create_customer(client, same.json["access_token"]).status_code == 403


def test_client_credentials_with_registered_scopes(make_app):
    prefix = "svc.authserver.client.job."
    client = Client(make_app({prefix + "client-id": "job", prefix + "client-secret": "job-secret",
                              prefix + "resource-roles": "rest-minimal, system-full-access",
                              prefix + "scopes": "read, write"}))
    answer = client.post("/oauth2/token", data={"grant_type": "client_credentials",
                                                "scope": "read"},
                         headers={"Authorization": basic("job", "job-secret")})
    assert answer.json["scope"] == "read"
    assert create_customer(client, answer.json["access_token"]).status_code == 403


def test_clients_without_scopes_behave_as_before(client):
    answer = client.post("/oauth2/token", data={"grant_type": "client_credentials",
                                                "scope": "read"},
                         headers={"Authorization": basic("demo-client", "demo-secret")})
    assert answer.status_code == 400 and answer.json["error"] == "invalid_scope"
    token = get_token(client)
    assert create_customer(client, token).status_code == 201


def test_metadata_lists_exactly_what_is_enabled(client):
    answer = client.get("/.well-known/oauth-authorization-server")
    assert answer.status_code == 200
    meta = answer.json
    assert meta["issuer"] == "http://localhost"
    assert meta["authorization_endpoint"] == "http://localhost/oauth2/authorize"
    assert meta["token_endpoint"] == "http://localhost/oauth2/token"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["response_types_supported"] == ["code"]
    assert set(meta["grant_types_supported"]) == {"client_credentials", "password",
                                                  "authorization_code", "refresh_token"}
    assert set(meta["token_endpoint_auth_methods_supported"]) == {
        "client_secret_basic", "client_secret_post", "none"}
    assert meta["scopes_supported"] == ["read", "write"]


def test_metadata_issuer_is_the_public_url_and_omits_what_is_off(make_app):
    client = Client(make_app({
        "svc.public-url": "https://api.example.com/base",
        "svc.authserver.client": {"only": {"client-id": "only", "client-secret": "only-secret"}}}))
    meta = client.get("/.well-known/oauth-authorization-server").json
    assert meta["issuer"] == "https://api.example.com/base"
    assert meta["token_endpoint"] == "https://api.example.com/base/oauth2/token"
    assert meta["grant_types_supported"] == ["client_credentials"]
    assert "authorization_endpoint" not in meta and "code_challenge_methods_supported" not in meta
    assert "none" not in meta["token_endpoint_auth_methods_supported"]
    assert "scopes_supported" not in meta
