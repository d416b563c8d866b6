"""The gate: protected and anonymous patterns, 401 format, tokens only in headers."""
import pytest
from werkzeug.test import Client

from conftest import get_token
from restsvc.security.gate import compile_patterns


def test_protected_path_without_token_is_401_with_bearer_challenge_and_json(client):
    response = client.get("/rest/metadata/entities")
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="restsvc", error="invalid_token", error_description="')
    assert set(response.json) == {"error", "error_description"}
    assert response.json["error"] == "invalid_token"


def test_unknown_token_is_401_invalid_token(client):
    response = client.get("/rest/metadata/entities", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.json["error_description"] == "The access token is invalid, expired or revoked"


def test_bearer_scheme_name_is_case_insensitive(client):
    token = get_token(client)
    assert client.get("/rest/metadata/enums", headers={"Authorization": f"bearer {token}"}).status_code == 200


def test_token_in_query_parameter_is_never_accepted(client):
    token = get_token(client)
    response = client.get(f"/rest/metadata/entities?access_token={token}")
    assert response.status_code == 401


def test_unknown_path_under_protected_prefix_is_401_without_and_404_with_token(client, auth):
    assert client.get("/rest/no/such/thing").status_code == 401
    response = client.get("/rest/no/such/thing", headers=auth)
    assert response.status_code == 404
    assert response.json["error"] == "Not Found"


def test_unprotected_unknown_path_is_404(client):
    assert client.get("/elsewhere").status_code == 404


def test_anonymous_patterns_open_paths_without_a_token(make_app):
    app = make_app({"svc.resource-server.anonymous-url-patterns": "/rest/metadata/**"})
    c = Client(app)
    assert c.get("/rest/metadata/enums").status_code == 200
    assert c.get("/rest/metadata/entities/Order").status_code == 200
    assert c.get("/rest/messages/enums").status_code == 401


def test_each_of_several_anonymous_patterns_opens_only_what_it_matches(make_app):
    c = Client(make_app({"svc.resource-server.anonymous-url-patterns":
                         "/rest/capabilities, /rest/metadata/enums"}))
    assert c.get("/rest/capabilities").status_code == 200
    assert c.get("/rest/metadata/enums").status_code == 200
    # Not a prefix: the first pattern does not open what merely starts like it.
    assert c.get("/rest/capabilities/x").status_code == 401
    assert c.get("/rest/metadata/enums/restsvc.demo.model.OrderStatus").status_code == 401


def test_authenticated_patterns_choose_what_is_protected(make_app):
    app = make_app({"svc.resource-server.authenticated-url-patterns": "/rest/messages/**"})
    c = Client(app)
    assert c.get("/rest/messages/enums").status_code == 401
    assert c.get("/rest/metadata/enums").status_code == 200


def test_a_token_without_rest_enabled_gets_403(make_app):
    app = make_app({"svc.authserver.client.reader.resource-roles": ""})
    c = Client(app)
    token = get_token(c, "reader", "reader-secret")
    response = c.get("/rest/metadata/enums", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert response.json == {"error": "Forbidden", "details": "User is not allowed to use the REST API"}


@pytest.mark.parametrize("pattern, path, matches", [
    ("/rest/**", "/rest", True),
    ("/rest/**", "/rest/a/b/c", True),
    ("/rest/**", "/restless", False),
    ("/rest/docs/*", "/rest/docs/openapi.json", True),
    ("/rest/docs/*", "/rest/docs/a/b", False),
    ("/rest/v?/x", "/rest/v2/x", True),
    ("/rest/v?/x", "/rest/v22/x", False),
    ("/api/**/items", "/api/a/b/items", True),
    ("/rest/a.b", "/rest/aXb", False),
])
def test_ant_patterns(pattern, path, matches):
    assert bool(compile_patterns([pattern]).match(path)) is matches
