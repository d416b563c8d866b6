"""What one read can make the service load and write is bounded: the depth
of fetch plans and the number of entities in one answer."""
import json

import pytest
from werkzeug.test import Client

from conftest import demo_id, get_token


def _nested(levels):
    """Order -> lines -> order -> lines ... with ``levels`` references."""
    plan = "_local"
    for level in range(levels, 0, -1):
        name = "lines" if level % 2 else "order"
        plan = {"properties": ["id", {"name": name, "fetchPlan": plan}]}
    return json.dumps({"entity": "Order", **plan})


@pytest.fixture
def big_order(client, auth):
    lines = [{"product": {"id": demo_id("product", i % 10)}, "quantity": 1} for i in range(100)]
    body = {"number": "BIG", "date": "2025-01-01", "customer": {"id": demo_id("customer", 0)},
            "lines": lines}
    response = client.post("/rest/entities/Order", json=body, headers=auth)
    assert response.status_code == 201, response.json
    return response.json["id"]


def test_a_plan_walking_a_composition_back_and_forth_is_refused_before_the_answer(
        client, auth, big_order):
    # 1 + 100 + 100 + 100^2 + 100^2 + 100^3 objects: a million and more.
    response = client.get(f"/rest/entities/Order/{big_order}", query_string={"fetchPlan": _nested(5)},
                          headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "Response too large"
    assert "100000 entities (svc.rest.max-response-entities)" in response.json["details"]
    small = client.get(f"/rest/entities/Order/{big_order}", query_string={"fetchPlan": _nested(3)},
                       headers=auth)
    assert small.status_code == 200 and len(small.json["lines"][0]["order"]["lines"]) == 100


def test_order_with_details_of_a_big_order_still_loads(client, auth, big_order):
    response = client.get(f"/rest/entities/Order/{big_order}?fetchPlan=order-with-details",
                          headers=auth)
    assert response.status_code == 200 and len(response.json["lines"]) == 100
    listed = client.get("/rest/entities/Order?fetchPlan=order-with-details", headers=auth)
    assert listed.status_code == 200 and len(listed.json) == 51


def test_fetch_plans_nested_deeper_than_the_setting_are_refused(client, auth):
    order = demo_id("order", 0)
    response = client.get(f"/rest/entities/Order/{order}", query_string={"fetchPlan": _nested(7)},
                          headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Fetch plan too deep", "details":
                             "The fetch plan is nested deeper than 6 levels "
                             "(svc.rest.max-fetch-plan-depth)"}
    assert client.get(f"/rest/entities/Order/{order}", query_string={"fetchPlan": _nested(6)},
                      headers=auth).status_code == 200
    chained = {"properties": ["number"]}
    for _ in range(10):
        chained = {"extends": chained, "properties": []}
    response = client.post("/rest/entities/Order/search", headers=auth,
                           json={"filter": {}, "fetchPlan": {"entity": "Order", **chained}})
    assert response.status_code == 400 and response.json["error"] == "Fetch plan too deep"


def test_the_limits_are_settings(make_app):
    c = Client(make_app({"svc.rest.max-response-entities": 30,
                         "svc.rest.max-fetch-plan-depth": 1}))
    auth = {"Authorization": f"Bearer {get_token(c)}"}
    assert c.get("/rest/entities/Customer?limit=30", headers=auth).status_code == 200
    # 20 orders and their customers are 40 entities.
    response = c.get("/rest/entities/Order?limit=20&fetchPlan=order-with-details", headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Response too large"
    assert "more than 30 entities" in response.json["details"]
    assert c.get("/rest/entities/Order?limit=20", headers=auth).status_code == 200
    plan = json.dumps({"entity": "Order", "properties": [
        {"name": "lines", "fetchPlan": {"properties": [{"name": "product", "fetchPlan": "_local"}]}}]})
    assert c.get("/rest/entities/Order", query_string={"fetchPlan": plan, "limit": "1"},
                 headers=auth).json["error"] == "Fetch plan too deep"


def test_json_nested_thousands_deep_is_a_400_everywhere(client, auth):
    deep = "[" * 5000 + "]" * 5000
    order = demo_id("order", 0)
    answers = [
        client.get(f"/rest/entities/Order/{order}", query_string={"fetchPlan": "{\"a\":" + deep + "}"},
                   headers=auth),
        client.get("/rest/entities/Order/search", query_string={"filter": deep}, headers=auth),
        client.post("/rest/entities/Order/search", data=deep, headers=auth),
        client.post("/rest/entities/Order", data=deep, headers=auth),
        client.get("/rest/queries/Order/ordersByStatus", query_string={"status": deep}, headers=auth),
    ]
    for response in answers:
        assert response.status_code == 400 and "error" in response.json, response.get_data()


@pytest.mark.parametrize("depth, status", [(512, 201), (513, 400)])
def test_json_input_nests_at_most_512_levels_whatever_the_python(client, auth, depth, status):
    """The bound is restsvc's, not the interpreter's (whose parser gives up
    near 1,000 levels on Python 3.11 and near 10,000 on 3.13): an attribute
    the entity does not have is ignored, however deep, up to the bound."""
    inner = depth - 1       # the body's object is the first level
    body = '{"name": "Deep", "notAnAttribute": ' + "[" * inner + "]" * inner + "}"
    response = client.post("/rest/entities/Customer", data=body, headers=auth,
                           content_type="application/json")
    assert response.status_code == status, response.get_data(as_text=True)
    if status == 400:
        assert response.json["error"] == "Malformed request JSON data structure"
