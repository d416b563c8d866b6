"""Configurable paths (reference 1.1): svc.rest.base-path, svc.rest.*-path and
svc.authserver.base-path move routing and everything that names a path."""
import pytest
from werkzeug.test import Client

from conftest import basic, bearer, make_settings, shipped_config
from restsvc.settings import SettingsError

PROTECTED = "svc.resource-server.authenticated-url-patterns"
PATHS = {"svc.rest.base-path": "/svc/v2", "svc.rest.entities-path": "/data",
         "svc.rest.docs-path": "/api-docs", "svc.rest.user-session-path": "/session",
         "svc.authserver.base-path": "/auth"}


@pytest.fixture
def moved(make_app):
    client = Client(make_app({**PATHS, PROTECTED: "/svc/v2/**, /api/**"}))
    response = client.post("/auth/token", data={"grant_type": "client_credentials"},
                           headers={"Authorization": basic("demo-client", "demo-secret")})
    assert response.status_code == 200
    return client, bearer(response.json["access_token"])


def test_routes_move_to_the_configured_paths(moved):
    client, auth = moved
    assert client.get("/svc/v2/data/Customer?limit=1", headers=auth).status_code == 200
    assert client.get("/svc/v2/metadata/enums", headers=auth).status_code == 200
    assert client.get("/svc/v2/version", headers=auth).status_code == 200
    assert client.get("/svc/v2/reports/report", headers=auth).status_code == 200
    assert client.get("/svc/v2/session", headers=auth).status_code == 200
    assert client.get("/rest/entities/Customer", headers=auth).status_code == 404
    assert client.post("/oauth2/token", data={"grant_type": "client_credentials"}).status_code == 404


def test_the_moved_api_is_protected_and_needs_rest_enabled(make_app):
    client = Client(make_app({**PATHS, PROTECTED: "/svc/v2/**, /api/**",
                              "svc.authserver.client.reader.resource-roles": ""}))
    assert client.get("/svc/v2/data/Customer").status_code == 401
    token = client.post("/auth/token", data={"grant_type": "client_credentials"},
                        headers={"Authorization": basic("reader", "reader-secret")}).json
    response = client.get("/svc/v2/data/Customer", headers=bearer(token["access_token"]))
    assert response.status_code == 403
    assert response.json["details"] == "User is not allowed to use the REST API"


def test_location_and_link_headers_use_the_configured_paths(moved):
    client, auth = moved
    created = client.post("/svc/v2/data/Customer", json={"name": "Moved"}, headers=auth)
    assert created.status_code == 201
    assert created.headers["Location"].startswith("/svc/v2/data/Customer/")
    page = client.get("/svc/v2/data/Customer?limit=2&sort=name", headers=auth)
    assert page.headers["Link"].startswith("</svc/v2/data/Customer?")


def test_the_documents_and_the_docs_page_use_the_configured_paths(moved):
    client, auth = moved
    assert client.get("/svc/v2/api-docs").status_code == 200      # the page: no token
    assert client.get("/svc/v2/api-docs/openapiDetailed.json").status_code == 401
    document = client.get("/svc/v2/api-docs/openapiDetailed.json", headers=auth).json
    paths = document["paths"]
    assert "/svc/v2/data/Customer/{entityId}" in paths
    assert "/svc/v2/version" in paths and "/svc/v2/session/locale" in paths
    assert "/auth/token" in paths and "/svc/v2/reports/report" in paths
    assert not [path for path in paths if path.startswith(("/rest/", "/oauth2/"))]
    # Operations keep their descriptions (the tables know them by their default paths).
    assert paths["/svc/v2/data/Customer/{entityId}"]["get"]["responses"]["200"]
    assert paths["/svc/v2/data/Customer/{entityId}"]["get"]["security"]
    flows = document["components"]["securitySchemes"]["clientCredentials"]["flows"]
    assert flows["clientCredentials"]["tokenUrl"] == "/auth/token"
    generic = client.get("/svc/v2/api-docs/openapi.json", headers=auth).json
    assert "/svc/v2/data/{entityName}" in generic["paths"]


def test_the_docs_page_names_the_moved_document_and_token_url(moved):
    client, _ = moved
    page = client.get("/svc/v2/api-docs").get_data(as_text=True)
    assert "/svc/v2/api-docs/openapiDetailed.json" in page
    assert 'data-token-url="/auth/token"' in page


def test_sign_in_page_and_server_metadata_use_the_authserver_path(make_app):
    client = Client(make_app({**PATHS, PROTECTED: "/svc/v2/**, /api/**"}))
    metadata = client.get("/.well-known/oauth-authorization-server").json
    assert metadata["token_endpoint"].endswith("/auth/token")
    assert metadata["authorization_endpoint"].endswith("/auth/authorize")
    assert metadata["revocation_endpoint"].endswith("/auth/revoke")
    assert metadata["introspection_endpoint"].endswith("/auth/introspect")
    page = client.get("/auth/authorize", query_string={
        "response_type": "code", "client_id": "demo-spa", "redirect_uri": "http://127.0.0.1/callback",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256"})
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'action="/auth/authorize"' in html and 'href="/auth/signin.css"' in html
    assert "Path=/auth/authorize" in page.headers["Set-Cookie"]
    assert client.get("/auth/signin.css").status_code == 200


@pytest.mark.parametrize("overrides, message", [
    ({"svc.rest.base-path": "rest"}, "svc.rest.base-path: invalid value"),
    ({"svc.rest.base-path": "/rest/"}, "svc.rest.base-path: invalid value"),
    ({"svc.rest.queries-path": "/entities"}, "is inside"),
    ({"svc.rest.files-path": "/entities/files"}, "svc.rest.files-path: /entities/files is inside "
                                                 "svc.rest.entities-path (/entities)"),
    ({"svc.rest.docs-path": "/version"}, "is inside"),
    ({"svc.authserver.base-path": "/rest/oauth"}, "svc.authserver.base-path"),
])
def test_paths_that_hide_each_other_stop_startup(tmp_path, overrides, message):
    with pytest.raises(SettingsError) as error:
        make_settings("sqlite:///x.db", tmp_path, overrides)
    assert message in str(error.value)


def test_a_moved_api_outside_the_authenticated_patterns_stops_startup(make_app):
    with pytest.raises(SettingsError, match="svc.rest.base-path: /svc/v2 is not protected"):
        make_app({"svc.rest.base-path": "/svc/v2",
                  "svc.resource-server.authenticated-url-patterns": "/rest/**, /api/**"})


def test_the_default_patterns_follow_the_base_path(tmp_path):
    config = shipped_config()
    del config["svc"]["resource-server"]["authenticated-url-patterns"]
    settings = make_settings("sqlite:///x.db", tmp_path, {"svc.rest.base-path": "/svc/v2"},
                             base=config)
    assert settings.authenticated_url_patterns == ("/svc/v2/**", "/api/**")


def test_the_change_feed_and_webhooks_follow_the_base_path(moved):
    client, auth = moved
    ticket = client.post("/svc/v2/events/tickets", headers=auth)
    assert ticket.status_code == 200, ticket.json
    assert client.get("/svc/v2/webhooks", headers=auth).status_code == 200
    assert client.post("/rest/events/tickets", headers=auth).status_code == 404
    # The ticket stream is the one anonymous path of the feed: a bad ticket is
    # the handler's 401, not the gate's.
    refused = client.get("/svc/v2/events/stream?ticket=forged")
    assert refused.status_code == 401
    assert "stream ticket" in refused.json["error_description"]
