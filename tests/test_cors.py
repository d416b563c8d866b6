"""CORS: preflight without a token, headers on actual responses, off by default."""
import pytest
from werkzeug.test import Client

from conftest import basic
from restsvc.settings import SettingsError

APP_ORIGIN = "https://app.example.com"
CORS = {"svc.cors.allowed-origins": f"{APP_ORIGIN}, http://localhost:5173",
        "svc.cors.allowed-methods": "GET, POST, PUT, DELETE",
        "svc.cors.allowed-headers": "Authorization, Content-Type, Accept-Language",
        "svc.cors.exposed-headers": "X-Total-Count",
        "svc.cors.max-age": "10m"}


def preflight(c, path, origin=APP_ORIGIN, method="GET", headers="Authorization"):
    request_headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers:
        request_headers["Access-Control-Request-Headers"] = headers
    return c.options(path, headers=request_headers)


@pytest.fixture
def cors_client(make_app):
    return Client(make_app(CORS))


@pytest.mark.parametrize("path, method", [("/rest/entities/Order", "GET"),
                                          ("/rest/userInfo", "GET"),
                                          ("/oauth2/token", "POST")])
def test_preflight_is_answered_without_a_token(cors_client, path, method):
    response = preflight(cors_client, path, method=method, headers="authorization, content-type")
    assert response.status_code == 204
    assert response.get_data() == b""
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert response.headers["Access-Control-Allow-Methods"] == "GET, POST, PUT, DELETE"
    assert response.headers["Access-Control-Allow-Headers"] == "authorization, content-type"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Access-Control-Allow-Credentials" not in response.headers
    assert "Origin" in response.headers["Vary"]


@pytest.mark.parametrize("origin, method, headers", [
    ("https://evil.example.com", "GET", "Authorization"),
    ("https://app.example.com:8443", "GET", "Authorization"),
    (APP_ORIGIN, "PATCH", "Authorization"),
    (APP_ORIGIN, "GET", "Authorization, X-Secret-Header"),
])
def test_a_preflight_asking_for_what_is_not_allowed_is_403(cors_client, origin, method, headers):
    response = preflight(cors_client, "/rest/userInfo", origin, method, headers)
    assert response.status_code == 403
    assert response.json == {"error": "Forbidden", "details": "Invalid CORS request"}
    assert "Access-Control-Allow-Origin" not in response.headers


def test_actual_responses_carry_the_allowed_origin(cors_client):
    response = cors_client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                                headers={"Authorization": basic("demo-client", "demo-secret"),
                                         "Origin": APP_ORIGIN})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN
    assert response.headers["Access-Control-Expose-Headers"] == "X-Total-Count"
    assert "Origin" in response.headers["Vary"]
    token = response.json["access_token"]
    response = cors_client.get("/rest/userInfo", headers={"Authorization": f"Bearer {token}",
                                                          "Origin": "http://localhost:5173"})
    assert response.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"


def test_error_responses_carry_cors_headers_so_browsers_can_read_them(cors_client):
    response = cors_client.get("/rest/userInfo", headers={"Origin": APP_ORIGIN})
    assert response.status_code == 401
    assert response.headers["Access-Control-Allow-Origin"] == APP_ORIGIN


def test_an_actual_request_from_another_origin_gets_no_cors_headers(cors_client):
    response = cors_client.get("/rest/userInfo", headers={"Origin": "https://evil.example.com"})
    assert response.status_code == 401
    assert "Access-Control-Allow-Origin" not in response.headers


def test_without_allowed_origins_there_is_no_cors(client):
    response = preflight(client, "/rest/userInfo")
    assert response.status_code == 401          # an ordinary OPTIONS request, needing a token
    assert "Access-Control-Allow-Origin" not in response.headers
    response = client.get("/rest/userInfo", headers={"Origin": APP_ORIGIN})
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Vary" not in response.headers


def test_any_origin_and_any_method_and_header(make_app):
    c = Client(make_app({"svc.cors.allowed-origins": "*"}))
    response = preflight(c, "/rest/userInfo", "https://anywhere.example", "PATCH", "X-Custom")
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.headers["Access-Control-Allow-Methods"] == "PATCH"
    assert response.headers["Access-Control-Allow-Headers"] == "X-Custom"
    assert c.get("/rest/userInfo", headers={"Origin": "https://x.example"}) \
        .headers["Access-Control-Allow-Origin"] == "*"


def test_credentials_are_allowed_for_named_origins(make_app):
    c = Client(make_app({**CORS, "svc.cors.allow-credentials": True}))
    response = preflight(c, "/rest/userInfo")
    assert response.headers["Access-Control-Allow-Credentials"] == "true"
    response = c.get("/rest/userInfo", headers={"Origin": APP_ORIGIN})
    assert response.headers["Access-Control-Allow-Credentials"] == "true"


def test_credentials_with_any_origin_fail_at_startup(make_app):
    with pytest.raises(SettingsError, match="svc.cors.allow-credentials"):
        make_app({"svc.cors.allowed-origins": "*", "svc.cors.allow-credentials": True})
