"""A client that knows nothing but the detailed document: it finds the
operations of an entity by their shape (no hand-written paths), builds
create, load and search requests from their schemas, and checks every answer
against the response schema the document gives."""
import uuid

import pytest
from jsonschema import Draft202012Validator


class DocumentClient:
    def __init__(self, client, headers, document):
        self.client = client
        self.headers = headers
        self.document = document
        self.schemas = document["components"]["schemas"]
        self.base = document["servers"][0]["url"].rstrip("/")

    def operations(self, tag):
        return [(path, method, op) for path, methods in self.document["paths"].items()
                for method, op in methods.items() if tag in op["tags"]]

    def find(self, tag, test):
        found = [(path, method, op) for path, method, op in self.operations(tag)
                 if test(path, method, op)]
        assert len(found) == 1, found
        return found[0]

    def resolve(self, schema):
        while "$ref" in schema:
            schema = self.schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def call(self, path, method, op, path_values=None, query=None, body=None):
        url = self.base + path.format(**(path_values or {}))
        response = self.client.open(url, method=method.upper(), headers=self.headers,
                                    query_string=query, json=body)
        documented = op["responses"].get(str(response.status_code))
        assert documented is not None, (response.status_code, response.get_data(as_text=True))
        if "content" in documented:
            schema = documented["content"][response.mimetype]["schema"]
            Draft202012Validator({**schema, "components": self.document["components"]},
                                 format_checker=Draft202012Validator.FORMAT_CHECKER
                                 ).validate(response.json)
        for name, spec in documented.get("headers", {}).items():
            assert not spec.get("required") or name in response.headers, name
        return response

    # -- operations found by their shape --------------------------------------
    def create(self, entity, body):
        op = self.find(entity, lambda p, m, o: m == "post" and "201" in o["responses"])
        return self.call(*op, body=body)

    def list(self, entity):
        # The GET of the path that creates (201): a search's GET pages too,
        # and needs nothing when it may take a text query (q) instead of a filter.
        op = self.find(entity, lambda p, m, o: m == "get" and "{" not in p and not any(
            prm.get("required") for prm in o.get("parameters", []))
            and "X-Total-Count" in o["responses"]["200"].get("headers", {})
            and "201" in self.document["paths"][p].get("post", {}).get("responses", {}))
        return self.call(*op, query={"limit": 1})

    def load(self, entity, entity_id):
        op = self.find(entity, lambda p, m, o: m == "get" and p.endswith("{entityId}"))
        return self.call(*op, path_values={"entityId": entity_id})

    def search(self, entity, search_filter):
        def is_search(path, method, op):
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            return method == "post" and "filter" in body.get("schema", {}).get("properties", {}) \
                and "X-Total-Count" in op["responses"]["200"].get("headers", {})
        return self.call(*self.find(entity, is_search), body={"filter": search_filter})

    # -- bodies built from the schemas ----------------------------------------
    def new_entity(self, entity):
        """The mandatory attributes, with valid values of their schemas;
        references point at the first visible entity the document's list gives."""
        new = self.schemas[f"entityNew_{entity}"]
        written = self.schemas[f"entity_{entity}"]["properties"]
        inputs = self.resolve(new["allOf"][0])["properties"]
        body = {}
        for name in new.get("required", []):
            target = _referenced(written[name])
            if target:
                body[name] = {"id": self.list(target).json[0]["id"]}
            else:
                body[name] = _value(self.resolve(inputs[name]))
        return body


def _referenced(schema):
    for option in schema.get("anyOf", [schema]):
        if "$ref" in option:
            return option["$ref"].rsplit("/", 1)[-1].removeprefix("entity_")
    return None


def _value(schema):
    schema = next((s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"), schema)
    if "enum" in schema:
        return next(v for v in schema["enum"] if v is not None)
    kind = schema["type"][0] if isinstance(schema["type"], list) else schema["type"]
    if kind == "string":
        if schema.get("maxLength", 99) < 20:        # e.g. a country code
            return uuid.uuid4().hex[:schema["maxLength"]].upper()
        return {"date": "2025-03-01", "uuid": str(uuid.uuid4())}.get(schema.get("format"),
                                                                     "made by the document")
    return {"integer": 3, "number": 7.5, "boolean": True}[kind]


@pytest.mark.parametrize("entity", ["Customer", "Product", "Order", "Tag", "Country"])
def test_a_client_built_from_the_document_alone_creates_loads_and_searches(client, auth, entity):
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    api = DocumentClient(client, auth, document)
    body = api.new_entity(entity)
    created = api.create(entity, body).json
    assert created["_entityName"] == entity
    loaded = api.load(entity, created["id"]).json
    assert {name: loaded[name] for name, value in body.items() if not isinstance(value, dict)} \
        == {name: value for name, value in body.items() if not isinstance(value, dict)}
    found = api.search(entity, {"conditions": [
        {"property": "id", "operator": "=", "value": created["id"]}]}).json
    assert [row["id"] for row in found] == [created["id"]]


def test_service_methods_called_from_the_document_alone_answer_as_documented(client, auth):
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    api = DocumentClient(client, auth, document)
    service_tags = [tag["name"] for tag in document["tags"] if tag["name"].endswith("Service")]
    assert service_tags
    answered = []
    for tag in service_tags:
        for path, method, op in api.operations(tag):
            if method != "get":
                continue
            query = {p["name"]: _value(p["schema"]) for p in op.get("parameters", [])}
            answered.append(api.call(path, method, op, query=query).status_code)
    assert 200 in answered       # ordersBetween: the orders between two dates, as entity_Order
