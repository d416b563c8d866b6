"""The OpenAPI documents: valid, complete against the route table, exact."""
import json
import re

import pytest
import yaml
from openapi_spec_validator import validate
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from restsvc.api import API_MODULES
from restsvc.errors import ApiError
from restsvc.openapi.document import described, openapi_path

DOCS = ("/rest/docs/openapi.json", "/rest/docs/openapi.yaml",
        "/rest/docs/openapiDetailed.json", "/rest/docs/openapiDetailed.yaml")
IGNORED = {"HEAD", "OPTIONS"}


def fetch(client, auth, path, **headers):
    response = client.get(path, headers={**auth, **headers})
    assert response.status_code == 200, response.get_data(as_text=True)
    text = response.get_data(as_text=True)
    return response, (yaml.safe_load(text) if "yaml" in response.mimetype else json.loads(text))


@pytest.mark.parametrize("path", DOCS)
def test_every_document_is_valid_openapi_3_1(client, auth, path):
    _, document = fetch(client, auth, path)
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_yaml_paths_and_accept_header_answer_yaml(client, auth):
    response, from_yaml = fetch(client, auth, "/rest/docs/openapi.yaml")
    assert response.mimetype == "application/yaml"
    response, negotiated = fetch(client, auth, "/rest/docs/openapi.json", Accept="application/yaml")
    assert response.mimetype == "application/yaml"
    response, from_json = fetch(client, auth, "/rest/docs/openapi.json")
    assert response.mimetype == "application/json"
    assert from_yaml == negotiated == from_json


def test_every_route_of_the_router_is_in_the_generic_document_with_its_methods(app, client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapi.json")
    for rule in app.url_map.iter_rules():
        if getattr(rule.endpoint, "undocumented", False):    # not an operation (services' 405)
            continue
        path, _ = openapi_path(rule.rule)
        assert path in document["paths"], path
        documented = {m.upper() for m in document["paths"][path]}
        assert set(rule.methods) - IGNORED <= documented, (path, rule.methods, documented)


def test_every_built_in_route_has_its_own_description():
    missing = [(method, rule.rule) for module in API_MODULES for rule in module.rules
               if not getattr(rule.endpoint, "undocumented", False)
               for method in set(rule.methods) - IGNORED
               if described(method, rule.rule, f"{rule.endpoint.__module__}."
                                               f"{rule.endpoint.__qualname__}") is None]
    assert missing == []


def test_application_endpoints_are_listed_as_the_application_declares_them(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapiDetailed.json")
    card = document["paths"]["/api/customers/{customerId}/card"]["get"]
    assert card["tags"] == ["Application"] and "default" in card["responses"]
    assert card["security"] == [{"clientCredentials": []}, {"password": []}, {"bearerAuth": []}]


@pytest.mark.parametrize("path", DOCS)
def test_documents_need_a_token_by_default(client, path):
    response = client.get(path)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_anonymous_patterns_open_the_documents_and_their_operations_say_so(make_app):
    client = Client(make_app({"svc.resource-server.anonymous-url-patterns": "/rest/docs/**"}))
    for path in DOCS + ("/rest/docs",):
        assert client.get(path).status_code == 200, path
    document = client.get("/rest/docs/openapi.json").json
    docs_get = document["paths"]["/rest/docs/openapi.json"]["get"]
    # No 401 or 503 (it needs no token and no database); 414 as every GET.
    assert docs_get["security"] == [] and set(docs_get["responses"]) == {"200", "414"}
    entities_get = document["paths"]["/rest/entities/{entityName}"]["get"]
    assert {"bearerAuth": []} in entities_get["security"] and "401" in entities_get["responses"]


def test_servers_and_token_url_follow_the_mount_point(app, auth):
    host = DispatcherMiddleware(lambda environ, start: [], {"/api": app})
    document = Client(host).get("/api/rest/docs/openapiDetailed.json", headers=auth).json
    assert document["servers"] == [{"url": "/api"}]
    schemes = document["components"]["securitySchemes"]
    assert schemes["clientCredentials"]["flows"]["clientCredentials"]["tokenUrl"] \
        == "/api/oauth2/token"
    assert schemes["password"]["flows"]["password"]["tokenUrl"] == "/api/oauth2/token"
    plain = Client(app).get("/rest/docs/openapiDetailed.json", headers=auth).json
    assert plain["servers"] == [{"url": "/"}]
    assert plain["components"]["securitySchemes"]["password"]["flows"]["password"]["tokenUrl"] \
        == "/oauth2/token"


def test_documents_are_generated_once(app, client, auth, monkeypatch):
    from restsvc.openapi.document import DocumentBuilder
    calls = []
    original = DocumentBuilder.detailed
    monkeypatch.setattr(DocumentBuilder, "detailed",
                        lambda self, *args: calls.append(1) or original(self, *args))
    first = client.get("/rest/docs/openapiDetailed.json", headers=auth).data
    second = client.get("/rest/docs/openapiDetailed.yaml", headers=auth).data
    third = client.get("/rest/docs/openapiDetailed.json", headers=auth).data
    assert calls == [1]
    assert first == third and yaml.safe_load(second) == json.loads(first)


def test_detailed_document_holds_no_values_from_the_database(client, auth):
    text = client.get("/rest/docs/openapiDetailed.yaml", headers=auth).get_data(as_text=True)
    customer = client.get(f"/rest/entities/Customer/{demo_id('customer', 1)}", headers=auth).json
    assert demo_id("customer", 1) not in text and demo_id("order", 1) not in text
    assert customer["name"] not in text
    assert "example" not in text


def test_entity_schemas_follow_the_metadata(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapiDetailed.json")
    schemas = document["components"]["schemas"]
    order = schemas["entity_Order"]["properties"]
    assert order["_entityName"] == {"type": "string", "const": "Order", "readOnly": True}
    assert order["id"]["format"] == "uuid"
    assert order["date"] == {"type": "string", "format": "date"}
    status = "enum_restsvc.demo.model.OrderStatus"     # one named schema per enum
    assert order["status"] == {"anyOf": [{"$ref": f"#/components/schemas/{status}"},
                                         {"type": "null"}]}
    assert schemas[status]["enum"] == ["NEW", "PAID", "SHIPPED", "CANCELLED"]
    assert schemas["entityInput_Order"]["properties"]["status"] == order["status"]
    assert order["id"]["type"] == "string"             # every answer has its id
    assert order["amount"]["type"] == ["number", "null"]
    assert order["customer"]["anyOf"][0] == {"$ref": "#/components/schemas/entity_Customer"}
    assert order["lines"] == {"type": "array",
                              "items": {"$ref": "#/components/schemas/entity_OrderLine"}}
    assert order["itemCount"]["readOnly"] is True
    assert schemas["entity_Customer"]["properties"]["createdDate"]["readOnly"] is True
    assert schemas["entity_Order"]["required"] == ["_entityName", "id"]
    assert schemas["entityNew_Order"]["required"] == ["number", "date", "customer"]
    line_in_order = schemas["entityInput_Order"]["properties"]["lines"]["items"]["anyOf"][0]
    assert line_in_order["required"] == ["product", "quantity"]      # not its owner "order"
    # A reference in a body is one named schema per target entity.
    assert schemas["entityInput_Order"]["properties"]["customer"] == {
        "$ref": "#/components/schemas/entityRef_Customer"}
    assert schemas["entityRef_Customer"]["required"] == ["id"]
    assert "createdDate" not in schemas["entityInput_Customer"]["properties"]


def test_entity_operations_carry_their_real_parameters(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapiDetailed.json")
    listing = document["paths"]["/rest/entities/Order"]["get"]
    params = {p["name"]: p for p in listing["parameters"]}
    assert set(params) == {"fetchPlan", "limit", "offset", "after", "sort", "returnNulls",
                           "returnCount", "X-Tenant-Id"}    # the demo has tenants
    assert params["X-Tenant-Id"]["in"] == "header" and not params["X-Tenant-Id"]["required"]
    assert params["fetchPlan"]["schema"]["anyOf"][0] == {
        "$ref": "#/components/schemas/fetchPlanName_Order"}
    assert "order-with-details" in document["components"]["schemas"]["fetchPlanName_Order"]["enum"]
    assert params["limit"]["schema"]["maximum"] == 10000
    assert params["returnCount"]["schema"] == {"type": "boolean"}
    assert "X-Total-Count" in listing["responses"]["200"]["headers"]
    created = document["paths"]["/rest/entities/Order"]["post"]["responses"]["201"]
    assert "Location" in created["headers"]
    search = document["paths"]["/rest/entities/Order/search"]
    filter_param = next(p for p in search["get"]["parameters"] if p["name"] == "filter")
    assert filter_param["required"] is True and filter_param["schema"] == {
        "type": "string", "contentMediaType": "application/json",
        "contentSchema": {"$ref": "#/components/schemas/filter"}}
    assert "414" in search["get"]["responses"] and "414" not in search["post"]["responses"]
    body = search["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["filter"]      # and no parameter but the tenant header
    assert [p["name"] for p in search["post"].get("parameters", [])] == ["X-Tenant-Id"]


def test_predefined_queries_have_typed_parameters(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapiDetailed.json")
    between = document["paths"]["/rest/queries/Order/ordersBetween"]
    params = {p["name"]: p for p in between["get"]["parameters"]}
    assert params["from"]["schema"] == {"type": "string", "format": "date"}
    assert params["from"]["required"] is True
    grades = document["paths"]["/rest/queries/Customer/customersByGrades"]["post"]
    schema = grades["requestBody"]["content"]["application/json"]["schema"]
    assert schema["properties"]["grades"] == {
        "type": "array", "items": {
            "$ref": "#/components/schemas/enum_restsvc.demo.model.CustomerGrade"},
        "maxItems": 1000}
    assert "/rest/queries/Order/ordersOfMonth/count" in document["paths"]


def test_generic_document_has_error_schemas_and_security_schemes(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapi.json")
    components = document["components"]
    assert components["schemas"]["error"]["required"] == ["error", "details"]
    assert components["schemas"]["validationErrors"]["type"] == "array"
    schemes = components["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    # One scheme per OAuth flow: the Authorize dialog offers each with its own fields.
    assert set(schemes["clientCredentials"]["flows"]) == {"clientCredentials"}
    assert set(schemes["password"]["flows"]) == {"password"}
    token = document["paths"]["/oauth2/token"]["post"]
    assert set(token["responses"]) == {"200", "400", "401", "413", "429", "503"}
    delete = document["paths"]["/rest/entities/{entityName}/{entityId}"]["delete"]
    assert set(delete["responses"]) == {"204", "400", "401", "403", "404", "409", "503"}


def test_disabled_inline_fetch_plans_leave_only_plan_names(make_app):
    app = make_app({"svc.rest.inline-fetch-plan-enabled": False})
    document = app.documents.document("detailed")
    params = document["paths"]["/rest/entities/Customer"]["get"]["parameters"]
    plan = next(p for p in params if p["name"] == "fetchPlan")
    assert plan["schema"] == {"$ref": "#/components/schemas/fetchPlanName_Customer"}
    assert document["components"]["schemas"]["fetchPlanName_Customer"]["enum"] == [
        "_local", "_instance_name", "_base"]


def test_service_methods_are_typed_by_their_parameters_and_results(client, auth):
    _, document = fetch(client, auth, "/rest/docs/openapiDetailed.json")
    paths = document["paths"]
    total = paths["/rest/services/orderService/calculateTotal"]["get"]
    assert total["parameters"][0] == {"name": "orderId", "in": "query", "required": True,
                                      "schema": {"type": "string", "format": "uuid"}}
    assert [p["name"] for p in total["parameters"][1:]] == ["X-Tenant-Id"]   # the demo's tenants
    assert "text/plain" in total["responses"]["200"]["content"]
    between = paths["/rest/services/orderService/ordersBetween"]["post"]
    assert between["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "fromDate", "toDate"]
    assert between["responses"]["200"]["content"]["application/json"]["schema"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/entity_Order"}}
    create = paths["/rest/services/orderService/createOrder"]
    assert set(create) == {"post"}              # POST only
    body = create["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["order"] == {"$ref": "#/components/schemas/entityInput_Order"}
    assert set(paths["/rest/services/orderService/recalculate"]["post"]["responses"]) >= {"204"}


def test_reports_and_health_checks_are_in_both_documents(client, auth):
    for path in ("/rest/docs/openapi.json", "/rest/docs/openapiDetailed.json"):
        _, document = fetch(client, auth, path)
        run = document["paths"]["/rest/reports/run/{reportId}"]["post"]
        assert run["tags"] == ["Reports"] and "401" in run["responses"]
        assert run["parameters"][0]["schema"] == {"type": "string", "format": "uuid"}
        assert "reportDetail" in document["components"]["schemas"]
        ready = document["paths"]["/health/ready"]["get"]
        assert ready["security"] == [] and set(ready["responses"]) == {"200", "414", "503"}
        assert ready["responses"]["503"]["content"]["application/json"]["schema"][
            "properties"]["status"] == {"$ref": "#/components/schemas/healthStatus"}
        assert document["components"]["schemas"]["healthStatus"]["enum"] == ["UP", "DOWN"]


def test_metrics_operation_says_it_needs_a_token_with_the_metrics_grant(client, auth):
    # The gate lets /metrics through without a token; its handler asks for one
    # (401) of a role holding the metrics grant (403): the documents say so.
    monitor = bearer(get_token(client, "monitor", "monitor-secret"))
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=auth).status_code == 403
    assert client.get("/metrics", headers=monitor).status_code == 200
    for path in ("/rest/docs/openapi.json", "/rest/docs/openapiDetailed.json"):
        _, document = fetch(client, auth, path)
        scrape = document["paths"]["/metrics"]["get"]
        assert {"bearerAuth": []} in scrape["security"], path
        assert {"401", "403"} <= set(scrape["responses"]), path
        assert scrape["tags"] == ["Metrics"], path



def test_no_open_route_is_documented_as_open_while_its_handler_asks_for_a_bearer_token(
        app, client, auth):
    # The class: a route the gate lets through without a token, whose handler
    # answers 401 without one and not with one, must list the bearer schemes.
    _, document = fetch(client, auth, "/rest/docs/openapi.json")
    asked = []
    for rule in app.url_map.iter_rules():
        sample = re.sub(r"<[^>]+>", "x", rule.rule)
        if app.gate.is_protected(sample):
            continue
        for method in sorted(set(rule.methods) - IGNORED):
            anonymous = client.open(sample, method=method).status_code
            with_token = client.open(sample, method=method, headers=auth).status_code
            if anonymous == 401 and with_token != 401:
                asked.append(rule.rule)
                path = openapi_path(rule.rule)[0]
                op = document["paths"][path][method.lower()]
                assert {"bearerAuth": []} in op["security"], (method, rule.rule)
                assert "401" in op["responses"], (method, rule.rule)
    assert "/metrics" in asked


def test_stream_operations_document_the_per_caller_share_answer(make_app, client, auth):
    # One caller holding its share of a worker's streams is answered 429 with
    # Retry-After (events/feed.py StreamSlots); both stream operations say so.
    app = make_app({"svc.events.max-streams-per-worker": "2"})
    app.event_streams.take("user:alice")
    with pytest.raises(ApiError) as refused:
        app.event_streams.take("user:alice")
    assert refused.value.status == 429
    for path in ("/rest/docs/openapi.json", "/rest/docs/openapiDetailed.json"):
        _, document = fetch(client, auth, path)
        for stream in ("/rest/events", "/rest/events/stream"):
            answer = document["paths"][stream]["get"]["responses"]["429"]
            assert "Retry-After" in answer["headers"], (path, stream)


def _patterns(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


# Python-only regex syntax that ECMAScript (the dialect OpenAPI names, and the one
# generated TypeScript/zod clients compile) rejects or reads otherwise.
PYTHON_ONLY = re.compile(r"\(\?P[<=]|\(\?[aiLmsux]+[):]|\\[AZ]|\(\?#")


@pytest.mark.parametrize("path", ("/rest/docs/openapi.json", "/rest/docs/openapiDetailed.json"))
def test_every_pattern_is_written_in_the_portable_regex_subset(client, auth, path):
    _, document = fetch(client, auth, path)
    patterns = set(_patterns(document))
    if "Detailed" in path:          # the demo's fileRef attributes are described there
        assert any("://" in pattern for pattern in patterns)
    for pattern in patterns:
        re.compile(pattern)
        assert not PYTHON_ONLY.search(pattern), pattern
