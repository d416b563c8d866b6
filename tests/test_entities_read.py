"""Entities API, reading: lists, one entity, fetch plans, paging, sort, JSON formats."""
import json

from conftest import demo_id

CUSTOMER_0 = demo_id("customer", 0)


def test_load_one_customer_in_the_reference_format(client, auth):
    response = client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json;charset=UTF-8"
    body = response.json
    assert list(body)[:3] == ["_entityName", "_instanceName", "id"]
    assert body == {"_entityName": "Customer", "_instanceName": "Alice Adler", "id": CUSTOMER_0,
                    "version": 1, "name": "Alice Adler", "email": "alice.adler@example.com",
                    "grade": "BRONZE", "birthDate": "1960-01-01", "createdDate": "2024-01-01T09:00:00",
                    "address": {"street": "Adlerweg 1", "city": "Berlin", "postcode": "10115"},
                    "tenantId": "north"}


def test_nulls_are_omitted_unless_return_nulls(client, auth):
    assert "photo" not in client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json
    body = client.get(f"/rest/entities/Customer/{CUSTOMER_0}?returnNulls=true", headers=auth).json
    assert body["photo"] is None


def test_decimals_keep_their_scale_as_json_numbers(client, auth):
    text = client.get(f"/rest/entities/Product/{demo_id('product', 0)}", headers=auth).get_data(as_text=True)
    assert '"price":249.00' in text
    text = client.get(f"/rest/entities/Product/{demo_id('product', 4)}", headers=auth).get_data(as_text=True)
    assert '"price":19.95' in text


def test_unknown_entity_is_404(client, auth):
    response = client.get("/rest/entities/Nope", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found", "details": "Entity Nope not found"}


def test_malformed_id_is_400_invalid_entity_id(client, auth):
    response = client.get("/rest/entities/Customer/A", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Invalid entity ID", "details": "Cannot convert A into valid entity ID"}


def test_missing_row_is_404(client, auth):
    missing = "00000000-0000-0000-0000-000000000001"
    response = client.get(f"/rest/entities/Customer/{missing}", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found",
                             "details": f"Entity Customer with id {missing} not found"}


def test_default_plan_is_base_without_references(client, auth):
    body = client.get(f"/rest/entities/Order/{demo_id('order', 0)}", headers=auth).json
    assert body["number"] == "00001" and body["amount"] is not None
    assert "customer" not in body and "lines" not in body and "itemCount" not in body


def test_named_fetch_plan_loads_references_and_compositions(client, auth):
    body = client.get(f"/rest/entities/Order/{demo_id('order', 4)}?fetchPlan=order-with-details",
                      headers=auth).json
    assert body["customer"]["_entityName"] == "Customer"
    assert body["customer"]["name"] == "Elif Eklund"
    assert len(body["lines"]) == 2
    line = body["lines"][0]
    assert list(line)[:3] == ["_entityName", "_instanceName", "id"]
    assert line["product"]["_instanceName"] == line["_instanceName"]
    assert body["itemCount"] == sum(item["quantity"] for item in body["lines"])


def test_transient_attribute_without_what_it_reads_loaded(client, auth):
    """The plan loads neither lines nor their quantities: the getter reads them
    from the stored order, and gives what the full plan gives."""
    order_id = demo_id("order", 4)
    full = client.get(f"/rest/entities/Order/{order_id}?fetchPlan=order-with-details",
                      headers=auth).json
    plan = {"entity": "Order", "properties": ["number", "itemCount"]}
    body = client.get(f"/rest/entities/Order/{order_id}",
                      query_string={"fetchPlan": json.dumps(plan)}, headers=auth).json
    assert "lines" not in body
    assert body["itemCount"] == full["itemCount"] == sum(line["quantity"] for line in full["lines"])


def test_inline_fetch_plan(client, auth):
    plan = {"entity": "Order",
            "properties": ["number", {"name": "customer", "fetchPlan": {"properties": ["email"]}}, "bogus"]}
    body = client.get(f"/rest/entities/Order/{demo_id('order', 0)}",
                      query_string={"fetchPlan": json.dumps(plan)}, headers=auth).json
    assert body["number"] == "00001" and "date" not in body
    assert body["customer"] == {"_entityName": "Customer", "_instanceName": "Alice Adler",
                                "id": CUSTOMER_0, "email": "alice.adler@example.com"}


def test_unknown_named_plan_is_400(client, auth):
    response = client.get("/rest/entities/Order?fetchPlan=nope", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Fetch plan not found", "details": "Fetch plan nope for entity Order not found"}


def test_inline_plans_can_be_disabled(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    c = Client(make_app({"svc.rest.inline-fetch-plan-enabled": False}))
    headers = {"Authorization": f"Bearer {get_token(c)}"}
    response = c.get("/rest/entities/Order", query_string={"fetchPlan": '{"entity":"Order","properties":["number"]}'},
                     headers=headers)
    assert response.status_code == 400
    assert response.json == {"error": "Inline fetch plans are disabled",
                             "details": "Inline fetch plans are disabled. Use only named fetch plans."}


def test_disabled_inline_plans_are_refused_in_a_search_body_too(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    c = Client(make_app({"svc.rest.inline-fetch-plan-enabled": False}))
    headers = {"Authorization": f"Bearer {get_token(c)}"}
    search = {"filter": {"conditions": []}, "fetchPlan": {"properties": ["number"]}}
    response = c.post("/rest/entities/Order/search", json=search, headers=headers)
    assert response.status_code == 400
    assert response.json["error"] == "Inline fetch plans are disabled"
    named = c.post("/rest/entities/Order/search", json={**search, "fetchPlan": "_local"},
                   headers=headers)
    assert named.status_code == 200


def test_limit_offset_and_total_count(client, auth):
    all_ids = [c["id"] for c in client.get("/rest/entities/Customer?sort=name", headers=auth).json]
    response = client.get("/rest/entities/Customer?sort=name&limit=3&offset=2&returnCount=true", headers=auth)
    assert [c["id"] for c in response.json] == all_ids[2:5]
    assert response.headers["X-Total-Count"] == "20"
    assert "X-Total-Count" not in client.get("/rest/entities/Customer?limit=1", headers=auth).headers


def test_sort_ascending_descending_and_by_several_keys(client, auth):
    names = [c["name"] for c in client.get("/rest/entities/Customer?sort=-name", headers=auth).json]
    assert names == sorted(names, reverse=True)
    rows = client.get("/rest/entities/Customer?sort=grade, -name", headers=auth).json
    keys = [(c["grade"], c["name"]) for c in rows]
    by_grade = sorted(keys, key=lambda k: ({"BRONZE": "B", "GOLD": "G", "SILVER": "S"}[k[0]]))
    assert [k[0] for k in keys] == [k[0] for k in by_grade]
    bronze = [name for grade, name in keys if grade == "BRONZE"]
    assert bronze == sorted(bronze, reverse=True)


def test_sort_by_a_reference_uses_its_instance_name(client, auth):
    plan = json.dumps({"entity": "Order", "properties": [{"name": "customer", "fetchPlan": "_instance_name"}]})
    rows = client.get("/rest/entities/Order", query_string={"sort": "+customer,number", "fetchPlan": plan},
                      headers=auth).json
    names = [r["customer"]["_instanceName"] for r in rows]
    assert names == sorted(names)
    dotted = client.get("/rest/entities/Order", query_string={"sort": "-customer.name", "fetchPlan": plan},
                        headers=auth).json
    assert [r["customer"]["_instanceName"] for r in dotted] == sorted(names, reverse=True)


def test_unknown_sort_properties_are_ignored(client, auth):
    response = client.get("/rest/entities/Customer?sort=nothing,-alsoNothing", headers=auth)
    assert response.status_code == 200 and len(response.json) == 20


def test_limit_above_the_maximum_is_400(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    c = Client(make_app({"svc.rest.default-max-fetch-size": 100,
                         "svc.rest.entity-max-fetch-size.Customer": 5}))
    headers = {"Authorization": f"Bearer {get_token(c)}"}
    response = c.get("/rest/entities/Customer?limit=6", headers=headers)
    assert response.status_code == 400
    assert response.json == {"error": "The value of limit exceeded",
                             "details": "The value of the limit exceeds the maximum possible value "
                                        "from application.properties"}
    assert len(c.get("/rest/entities/Customer", headers=headers).json) == 5
    assert len(c.get("/rest/entities/Order?limit=100", headers=headers).json) == 50


def test_bad_paging_parameters_are_400(client, auth):
    for query in ("limit=abc", "offset=-1", "returnCount=perhaps"):
        response = client.get(f"/rest/entities/Customer?{query}", headers=auth)
        assert response.status_code == 400, query
        assert response.json["error"] == "Invalid parameter value"
