"""What the docs page shows first, before one signs in: the API's title and
description, how to sign in, the operations that need no token; the
Authorize dialog offers only the flows the registered clients can use, the
most used first; technical routes are no operations; the application's
entities come before the built-in ones."""
from werkzeug.test import Client

from conftest import get_token

PUBLIC = "/rest/docs/assets/openapiPublic.json"
ONLY_CLIENT_CREDENTIALS = {"svc.authserver.client": {"only": {
    "client-id": "only", "client-secret": "{noop}only-secret",
    "authorization-grant-types": "client_credentials",
    "resource-roles": "rest-minimal, system-full-access"}}}


def test_the_page_opens_on_the_public_document(client):
    page = client.get("/rest/docs").get_data(as_text=True)
    assert f'data-public-url="{PUBLIC}"' in page
    script = client.get("/rest/docs/assets/restsvc-init.js").get_data(as_text=True)
    assert "url: publicUrl" in script and "paths: {}" not in script


def test_the_public_document_has_the_apis_identity_sign_in_and_what_needs_no_token(make_app):
    client = Client(make_app({"svc.rest.docs.title": "Shop API",
                              "svc.rest.docs.description": "The shop's orders."}))
    answer = client.get(PUBLIC)        # no token: the shipped settings protect /rest/**
    assert answer.status_code == 200 and answer.mimetype == "application/json"
    document = answer.json
    assert document["info"]["title"] == "Shop API"
    assert document["info"]["description"].startswith("The shop's orders.")
    assert "**Authorize**" in document["info"]["description"]
    assert {"/oauth2/token", "/health/live"} <= set(document["paths"])
    for methods in document["paths"].values():
        for op in methods.values():
            assert not any("bearerAuth" in need for need in op["security"]), op
    # The model stays behind the sign-in.
    assert not any(name.startswith(("entity", "enum_")) for name in document["components"]["schemas"])
    assert "/rest/entities/Order" not in document["paths"]


def test_authorize_offers_the_flows_of_the_registered_clients_most_used_first(client, make_app):
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    shipped = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    assert list(shipped["components"]["securitySchemes"]) == [
        "clientCredentials", "password", "bearerAuth", "clientBasic"]
    only = Client(make_app(ONLY_CLIENT_CREDENTIALS))
    for path, headers in ((PUBLIC, {}), ("/rest/docs/openapiDetailed.json", {
            "Authorization": f"Bearer {get_token(only, 'only', 'only-secret')}"})):
        document = only.get(path, headers=headers).json
        assert list(document["components"]["securitySchemes"]) == [
            "clientCredentials", "bearerAuth", "clientBasic"], path
        assert "password" not in document["info"]["description"]
        for methods in document["paths"].values():
            for op in methods.values():
                assert all("password" not in need for need in op["security"])


def test_the_sign_in_pages_and_the_docs_pages_files_are_no_operations(client):
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    for name in ("openapi.json", "openapiDetailed.json"):
        paths = client.get(f"/rest/docs/{name}", headers=auth).json["paths"]
        assert "/oauth2/signin.css" not in paths and "/rest/docs/assets/{asset}" not in paths
        assert "/oauth2/token" in paths and "/rest/docs" in paths


def test_the_applications_entities_come_before_the_built_in_ones(client):
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    tags = [tag["name"] for tag in
            client.get("/rest/docs/openapiDetailed.json", headers=auth).json["tags"]]
    own = [tags.index(name) for name in ("Country", "Tag", "Customer", "Product", "Order")]
    built_in = [tags.index(name) for name in ("User", "HistoryItem")]
    assert own == sorted(own) and max(own) < min(built_in)
