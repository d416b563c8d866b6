"""What the caller-facing metadata and the detailed OpenAPI document reveal:
only what the caller may read or call, as /rest/services shows only the
methods it may call. The generic document stays the same for everyone."""
import json

import yaml
from openapi_spec_validator import validate

from restsvc import ResourceRole

DETAILED = "/rest/docs/openapiDetailed.json"
PRODUCTS_ONLY = ResourceRole("products-only", entities={"Product": "read"},
                             attributes={"Product": {"*": "view"}})


def entity_names(client, headers):
    response = client.get("/rest/metadata/entities", headers=headers)
    assert response.status_code == 200
    return {entity["entityName"]: entity for entity in response.json}


def property_names(entity):
    return {prop["name"] for prop in entity["properties"]}


def test_metadata_lists_only_the_entities_and_attributes_the_caller_may_read(
        client, auth, reader_auth):
    everything = entity_names(client, auth)
    shown = entity_names(client, reader_auth)
    assert "User" in everything and "User" not in shown
    assert set(shown) == {"Customer", "Order", "OrderLine", "Product", "Tag", "Country"}
    assert "email" in property_names(everything["Customer"])
    assert "email" not in property_names(shown["Customer"])
    one = client.get("/rest/metadata/entities/Customer", headers=reader_auth).json
    assert one == shown["Customer"]           # the reference's shape, fewer properties
    assert set(one) == {"entityName", "ancestor", "properties"}


def test_metadata_of_an_entity_the_caller_may_not_read_is_403_as_in_the_entities_api(
        client, reader_auth):
    for path in ("/rest/metadata/entities/User", "/rest/metadata/entities/User/fetchPlans",
                 "/rest/metadata/entities/User/fetchPlans/_local"):
        response = client.get(path, headers=reader_auth)
        assert response.status_code == 403, path
        assert response.json == {"error": "Reading forbidden",
                                 "details": "Reading of the User is forbidden"}
    assert client.get("/rest/entities/User", headers=reader_auth).json["error"] == \
        "Reading forbidden"
    assert client.get("/rest/metadata/entities/Nothing", headers=reader_auth).status_code == 404


def test_enums_only_hidden_attributes_use_are_left_out(client_with_roles):
    client, headers = client_with_roles(PRODUCTS_ONLY)
    assert set(entity_names(client, headers)) == {"Product"}
    assert client.get("/rest/metadata/enums", headers=headers).json == []
    response = client.get("/rest/metadata/enums/OrderStatus", headers=headers)
    assert response.status_code == 404 and response.json["error"] == "Enum not found"


def test_detailed_document_shows_only_what_the_caller_may_read_and_call(
        client, auth, reader_auth):
    full = client.get(DETAILED, headers=auth).json
    document = client.get(DETAILED, headers=reader_auth).json
    validate(document)
    paths, schemas = document["paths"], document["components"]["schemas"]
    assert "/rest/entities/User" in full["paths"]
    assert not any("/User" in path for path in paths)
    assert "entity_User" not in schemas
    assert "email" in full["components"]["schemas"]["entity_Customer"]["properties"]
    assert "email" not in schemas["entity_Customer"]["properties"]
    # Reading only: no create, update or delete operations of its entities.
    assert "post" in full["paths"]["/rest/entities/Customer"]
    assert set(paths["/rest/entities/Customer"]) == {"get"}
    assert set(paths["/rest/entities/Customer/{entityId}"]) == {"get"}
    assert "post" in paths["/rest/entities/Customer/search"]
    # Only the service methods it may call, as /rest/services lists them.
    callable_ = {f"/rest/services/{s['name']}/{m['name']}"
                 for s in client.get("/rest/services", headers=reader_auth).json
                 for m in s["methods"]}
    assert {p for p in paths if p.count("/") == 4 and p.startswith("/rest/services/")} \
        == callable_
    assert "/rest/services/orderService/createOrder" in full["paths"]
    assert "/rest/services/orderService/createOrder" not in paths
    names = document["paths"]["/rest/metadata/entities/{entityName}"]["get"]["parameters"][0][
        "schema"]["$ref"].rsplit("/", 1)[1]      # every enum is one named schema
    assert schemas[names]["enum"] == list(entity_names(client, reader_auth))
    as_yaml = client.get("/rest/docs/openapiDetailed.yaml", headers=reader_auth)
    assert yaml.safe_load(as_yaml.get_data(as_text=True)) == document


def test_a_caller_with_almost_no_rights_gets_a_valid_document(client_with_roles):
    client, headers = client_with_roles(PRODUCTS_ONLY)
    document = client.get(DETAILED, headers=headers).json
    validate(document)
    assert {path for path in document["paths"] if path.startswith("/rest/entities/")} == {
        "/rest/entities/Product", "/rest/entities/Product/search",
        "/rest/entities/Product/search/count", "/rest/entities/Product/aggregate",
        "/rest/entities/Product/{entityId}"}
    assert not any(path.startswith("/rest/services/") and path.count("/") == 4
                   for path in document["paths"])


def test_the_detailed_document_is_built_once_per_combination_of_roles(
        app, client, auth, reader_auth, alice_auth, monkeypatch):
    from restsvc.openapi.document import DocumentBuilder
    built = []
    original = DocumentBuilder.detailed
    monkeypatch.setattr(DocumentBuilder, "detailed", lambda self, permissions=None: built.append(
        (permissions.resource_roles, permissions.row_level_roles)) or original(self, permissions))
    reader = client.get(DETAILED, headers=reader_auth).data
    assert client.get(DETAILED, headers=reader_auth).data == reader
    client.get("/rest/docs/openapiDetailed.yaml", headers=reader_auth)
    client.get(DETAILED, headers=auth)
    client.get(DETAILED, headers=auth)
    # alice, a user, holds the reader client's roles: the same document.
    assert client.get(DETAILED, headers=alice_auth).data == reader
    assert built == [(("rest-minimal", "sales-reader"), ("public-tags",)),
                     (("rest-minimal", "system-full-access"), ())]
    assert json.loads(reader) != json.loads(client.get(DETAILED, headers=auth).data)


def test_the_generic_document_is_the_same_for_every_caller(client, auth, reader_auth):
    generic = "/rest/docs/openapi.json"
    assert client.get(generic, headers=reader_auth).data == client.get(generic, headers=auth).data


def test_caller_dependent_metadata_and_documents_are_never_cached_for_others(
        client, reader_auth):
    for path in ("/rest/metadata/entities", "/rest/metadata/entities/Customer",
                 "/rest/metadata/enums", DETAILED, "/rest/docs/openapiDetailed.yaml",
                 "/rest/messages/entities"):
        response = client.get(path, headers=reader_auth)
        assert response.status_code == 200, path
        assert response.headers.get("Cache-Control") == "no-store", path
