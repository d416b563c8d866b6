"""Metadata API: entities, properties, fetch plans and enums of the demo."""
import pytest


ORDER_PROPERTIES = {
    "id": ("DATATYPE", "uuid", "NONE", False, False, True),
    "version": ("DATATYPE", "int", "NONE", False, False, True),
    "number": ("DATATYPE", "string", "NONE", True, False, True),
    "date": ("DATATYPE", "localDate", "NONE", True, False, True),
    "customer": ("ASSOCIATION", "Customer", "MANY_TO_ONE", True, False, True),
    "status": ("ENUM", "restsvc.demo.model.OrderStatus", "NONE", False, False, True),
    "amount": ("DATATYPE", "decimal", "NONE", False, False, True),
    "createdBy": ("DATATYPE", "string", "NONE", False, True, True),
    "createdDate": ("DATATYPE", "dateTime", "NONE", False, True, True),
    "lastModifiedBy": ("DATATYPE", "string", "NONE", False, True, True),
    "lastModifiedDate": ("DATATYPE", "dateTime", "NONE", False, True, True),
    "deletedDate": ("DATATYPE", "dateTime", "NONE", False, True, True),
    "deletedBy": ("DATATYPE", "string", "NONE", False, True, True),
    "tenantId": ("DATATYPE", "string", "NONE", True, True, True),     # tenant-scoped: the demo's
    "lines": ("COMPOSITION", "OrderLine", "ONE_TO_MANY", False, False, True),
    "itemCount": ("DATATYPE", "int", "NONE", False, True, False),
}


def properties_by_name(body):
    return {p["name"]: p for p in body["properties"]}


def test_order_metadata_shows_every_property(client, auth):
    response = client.get("/rest/metadata/entities/Order", headers=auth)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json;charset=UTF-8"
    body = response.json
    assert body["entityName"] == "Order" and body["ancestor"] is None
    props = properties_by_name(body)
    assert list(props) == list(ORDER_PROPERTIES)
    for name, (attr_type, type_name, cardinality, mandatory, read_only, persistent) in ORDER_PROPERTIES.items():
        p = props[name]
        assert (p["attributeType"], p["type"], p["cardinality"], p["mandatory"], p["readOnly"],
                p["persistent"], p["transient"]) == (
            attr_type, type_name, cardinality, mandatory, read_only, persistent, not persistent), name
    assert props["number"]["description"] == "Number"


def test_customer_metadata_types(client, auth):
    props = properties_by_name(client.get("/rest/metadata/entities/Customer", headers=auth).json)
    assert props["grade"]["type"] == "restsvc.demo.model.CustomerGrade"
    assert props["photo"]["type"] == "fileRef"
    assert props["birthDate"]["type"] == "localDate"
    assert props["createdDate"]["type"] == "dateTime"
    assert props["createdDate"]["readOnly"] is True
    assert props["name"]["mandatory"] is True and props["email"]["mandatory"] is False


def test_order_line_refers_back_to_its_order(client, auth):
    props = properties_by_name(client.get("/rest/metadata/entities/OrderLine", headers=auth).json)
    assert props["order"]["attributeType"] == "ASSOCIATION"
    assert props["order"]["type"] == "Order"
    assert props["product"]["mandatory"] is True
    assert props["quantity"]["type"] == "int" and props["quantity"]["mandatory"] is True


def test_all_entities(client, auth):
    body = client.get("/rest/metadata/entities", headers=auth).json
    assert {e["entityName"] for e in body} >= {"Customer", "Product", "Order", "OrderLine"}


def test_descriptions_follow_accept_language(client, auth):
    body = client.get("/rest/metadata/entities/Order", headers={**auth, "Accept-Language": "de"}).json
    assert properties_by_name(body)["number"]["description"] == "Bestellnummer"


def test_unknown_entity_is_404(client, auth):
    response = client.get("/rest/metadata/entities/Nope", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found", "details": "Entity Nope not found"}


def test_fetch_plans_list_only_named_plans(client, auth):
    body = client.get("/rest/metadata/entities/Order/fetchPlans", headers=auth).json
    assert [plan["name"] for plan in body] == ["order-with-details"]
    assert client.get("/rest/metadata/entities/Customer/fetchPlans", headers=auth).json == []
    products = client.get("/rest/metadata/entities/Product/fetchPlans", headers=auth).json
    assert [plan["name"] for plan in products] == ["product-with-tags"]


def test_named_fetch_plan_nests_references(client, auth):
    body = client.get("/rest/metadata/entities/Order/fetchPlans/order-with-details", headers=auth).json
    assert body["name"] == "order-with-details" and body["entity"] == "Order"
    items = {p if isinstance(p, str) else p["name"]: p for p in body["properties"]}
    assert {"id", "number", "date", "status", "amount", "itemCount"} <= set(items)
    assert items["customer"]["fetchPlan"]["name"] == "_base"
    assert "entity" not in items["customer"]["fetchPlan"]
    lines = items["lines"]["fetchPlan"]
    assert "name" not in lines
    product = next(p for p in lines["properties"] if isinstance(p, dict))
    assert product["name"] == "product" and "name" in product["fetchPlan"]["properties"]


def test_built_in_fetch_plans_by_name(client, auth):
    local = client.get("/rest/metadata/entities/Order/fetchPlans/_local", headers=auth).json
    assert local == {"name": "_local", "entity": "Order",
                     "properties": ["id", "version", "number", "date", "status", "amount",
                                    "createdBy", "createdDate", "lastModifiedBy", "lastModifiedDate",
                                    "deletedDate", "deletedBy", "tenantId"]}
    instance = client.get("/rest/metadata/entities/OrderLine/fetchPlans/_instance_name", headers=auth).json
    assert instance["properties"] == [{"name": "product", "fetchPlan": {
        "name": "_instance_name", "properties": ["name"]}}]
    base = client.get("/rest/metadata/entities/Order/fetchPlans/_base", headers=auth).json
    assert "customer" not in [p for p in base["properties"] if isinstance(p, str)]


def test_unknown_fetch_plan_is_404(client, auth):
    response = client.get("/rest/metadata/entities/Order/fetchPlans/nope", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Fetch plan not found",
                             "details": "Fetch plan nope for metaClass Order not found"}


def test_enums_with_string_ids_and_captions(client, auth):
    body = client.get("/rest/metadata/enums", headers=auth).json
    grade = next(e for e in body if e["name"] == "restsvc.demo.model.CustomerGrade")
    assert grade["values"] == [{"name": "BRONZE", "id": "B", "caption": "Bronze"},
                               {"name": "SILVER", "id": "S", "caption": "Silver"},
                               {"name": "GOLD", "id": "G", "caption": "Gold"}]


def test_one_enum_and_unknown_enum(client, auth):
    body = client.get("/rest/metadata/enums/restsvc.demo.model.OrderStatus",
                      headers={**auth, "Accept-Language": "de"}).json
    assert [v["caption"] for v in body["values"]] == ["Neu", "Bezahlt", "Versandt", "Storniert"]
    assert [v["id"] for v in body["values"]] == ["10", "20", "30", "40"]
    response = client.get("/rest/metadata/enums/x.Nope", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Enum not found", "details": "Enum with class name x.Nope not found"}


def test_datatypes_with_their_formats(client, auth):
    body = {d["id"]: d for d in client.get("/rest/metadata/datatypes", headers=auth).json}
    assert {"string", "int", "long", "decimal", "double", "boolean", "uuid", "localDate",
            "localDateTime", "dateTime", "localTime", "fileRef", "json"} == set(body)
    assert body["string"] == {"id": "string", "name": "string"}
    assert body["decimal"]["decimalSeparator"] == "."


def test_capabilities_need_a_token_but_not_rest_enabled(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    app = make_app({"svc.rest.inline-fetch-plan-enabled": False,
                    "svc.authserver.client.reader.resource-roles": ""})
    c = Client(app)
    assert c.get("/rest/capabilities").status_code == 401
    token = get_token(c, "reader", "reader-secret")
    response = c.get("/rest/capabilities", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.json == {"inlineFetchPlans": False}


@pytest.mark.parametrize("path", ["", "/order-with-details", "/_local", "/nope"])
def test_views_paths_answer_like_fetch_plans(client, auth, path):
    plans = client.get(f"/rest/metadata/entities/Order/fetchPlans{path}", headers=auth)
    views = client.get(f"/rest/metadata/entities/Order/views{path}", headers=auth)
    assert (views.status_code, views.json) == (plans.status_code, plans.json)
    assert views.status_code == (404 if path == "/nope" else 200)


def test_views_paths_need_a_token(client):
    assert client.get("/rest/metadata/entities/Order/views").status_code == 401
