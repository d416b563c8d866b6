"""Services API: the demo's services by GET and POST, results, errors and transactions."""
import decimal

import pytest

from conftest import demo_id

ORDER_0 = demo_id("order", 0)
PRODUCT_1 = demo_id("product", 1)       # Inverter, 899.50
CUSTOMER_0 = demo_id("customer", 0)
TEXT = "text/plain;charset=UTF-8"


def call(client, auth, path, **params):
    return client.get(f"/rest/services/{path}", query_string=params, headers=auth)


def test_a_simple_result_is_text_in_its_text_form_by_get_and_post(client, auth):
    by_get = call(client, auth, "orderService/calculateTotal", orderId=ORDER_0)
    by_post = client.post("/rest/services/orderService/calculateTotal", json={"orderId": ORDER_0},
                          headers=auth)
    assert by_get.status_code == by_post.status_code == 200
    assert by_get.content_type == by_post.content_type == TEXT
    assert by_get.get_data(as_text=True) == by_post.get_data(as_text=True) == "249.00"


def test_an_entity_list_result_is_entity_json(client, auth):
    response = call(client, auth, "orderService/ordersBetween", fromDate="2024-01-01", toDate="2024-01-07")
    assert response.status_code == 200 and response.is_json
    assert [o["date"] for o in response.json] == ["2024-01-01", "2024-01-04", "2024-01-07"]
    assert response.json[0]["_entityName"] == "Order" and response.json[0]["number"] == "00001"


def test_an_entity_parameter_is_stored_and_the_stored_entity_returned(client, auth):
    response = client.post("/rest/services/orderService/createOrder", headers=auth, json={"order": {
        "number": "S-1", "date": "2025-03-01", "status": "NEW", "customer": {"id": CUSTOMER_0},
        "lines": [{"product": {"id": PRODUCT_1}, "quantity": 2}]}})
    assert response.status_code == 200, response.get_data(as_text=True)
    order = response.json
    assert order["_entityName"] == "Order" and order["number"] == "S-1"
    assert order["amount"] == decimal.Decimal("1799.00") and order["lines"][0]["price"] == decimal.Decimal("899.50")
    stored = client.get(f"/rest/entities/Order/{order['id']}", headers=auth).json
    assert stored["amount"] == decimal.Decimal("1799.00")


def test_a_structured_parameter_and_result_are_json_objects(client, auth):
    response = client.post("/rest/services/orderService/summarize", headers=auth, json={"criteria": {
        "fromDate": "2024-01-01", "toDate": "2024-01-31", "statuses": ["NEW", "PAID"]}})
    assert response.status_code == 200 and response.is_json
    summary = response.json
    assert summary["fromDate"] == "2024-01-01" and summary["count"] == 6
    assert {s["status"] for s in summary["byStatus"]} == {"NEW", "PAID"}
    assert sum(s["count"] for s in summary["byStatus"]) == 6


def test_orders_without_a_status_are_a_group_of_their_own(client, auth):
    created = client.post("/rest/entities/Order", headers=auth, json={
        "number": "NO-STATUS", "date": "2024-01-15", "customer": {"id": CUSTOMER_0},
        "status": None})
    assert created.status_code == 201
    response = client.post("/rest/services/orderService/summarize", headers=auth, json={
        "criteria": {"fromDate": "2024-01-15", "toDate": "2024-01-15", "statuses": None}})
    assert response.status_code == 200
    without = [group for group in response.json["byStatus"] if group.get("status") is None]
    assert len(without) == 1 and without[0]["count"] == 1
    # ...which the document allows: a StatusTotal's status is optional.
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    operation = document["paths"]["/rest/services/orderService/summarize"]["post"]
    result = operation["responses"]["200"]["content"]["application/json"]["schema"]
    item = result["properties"]["byStatus"]["items"]
    assert "status" in item["properties"] and "status" not in item["required"]


def test_a_method_returning_nothing_answers_204_and_its_write_stays(client, auth):
    client.put(f"/rest/entities/Order/{ORDER_0}", json={"amount": 1}, headers=auth)
    response = client.post("/rest/services/orderService/recalculate", json={"orderId": ORDER_0}, headers=auth)
    assert response.status_code == 204 and response.get_data() == b""
    assert call(client, auth, "orderService/calculateTotal", orderId=ORDER_0).get_data(as_text=True) == "249.00"


def test_the_xml_service_by_get_with_an_optional_parameter_and_by_post(client, auth):
    assert call(client, auth, "productPriceService/price", productId=PRODUCT_1).get_data(as_text=True) == "899.50"
    assert call(client, auth, "productPriceService/price", productId=PRODUCT_1,
                quantity="3").get_data(as_text=True) == "2698.50"
    response = client.post("/rest/services/productPriceService/setPrice", headers=auth,
                           json={"productId": PRODUCT_1, "price": 10.5})
    assert response.status_code == 200 and response.json["price"] == decimal.Decimal("10.50")


def test_descriptors_list_the_exposed_methods(client, auth):
    response = client.get("/rest/services/productPriceService", headers=auth)
    assert response.status_code == 200
    assert response.json == {"name": "productPriceService", "methods": [
        {"name": "price", "httpMethod": "GET", "params": [
            {"name": "productId", "type": "uuid", "required": True},
            {"name": "quantity", "type": "int", "required": False}]},
        {"name": "setPrice", "httpMethod": "POST", "params": [
            {"name": "productId", "type": "java.util.UUID", "required": True},
            {"name": "price", "type": "decimal", "required": True}]}]}
    services = {s["name"]: s for s in client.get("/rest/services", headers=auth).json}
    methods = {(m["name"], m["httpMethod"]) for m in services["orderService"]["methods"]}
    assert ("calculateTotal", "GET") in methods and ("calculateTotal", "POST") in methods
    assert ("createOrder", "POST") in methods and ("createOrder", "GET") not in methods


@pytest.mark.parametrize("path, status, error, details", [
    ("nope/x", 404, "Service not found", "Service nope not found"),
    ("orderService/nope", 404, "Service method not found", "orderService.nope"),
    ("orderService/calculateTotal?orderId=x", 400, "Invalid parameter value",
     "Invalid parameter value for orderId"),
    ("orderService/calculateTotal", 400, "Invalid parameter value", "Invalid parameter value for orderId"),
    ("orderService/ordersBetween?fromDate=2024-13-01&toDate=2024-01-01", 400, "Invalid parameter value",
     "Invalid parameter value for fromDate"),
])
def test_errors_use_the_reference_strings(client, auth, path, status, error, details):
    response = client.get(f"/rest/services/{path}", headers=auth)
    assert response.status_code == status
    assert response.json == {"error": error, "details": details}


def test_an_http_method_the_method_does_not_allow_is_405_with_allow(client, auth):
    response = call(client, auth, "orderService/createOrder")
    assert response.status_code == 405 and response.headers["Allow"] == "POST"


@pytest.mark.parametrize("method, path, allow", [
    ("OPTIONS", "orderService/createOrder", "POST"),
    ("PUT", "orderService/createOrder", "POST"),
    ("DELETE", "productPriceService/price", "GET"),
    ("PATCH", "orderService/summarize", "POST"),
])
def test_any_other_http_method_is_405_with_the_methods_own_allow(client, auth, method, path, allow):
    response = client.open(f"/rest/services/{path}", method=method, headers=auth)
    assert response.status_code == 405
    assert response.headers["Allow"] == allow


def test_another_http_method_of_an_unknown_method_is_404(client, auth):
    assert client.open("/rest/services/orderService/nothing", method="OPTIONS",
                       headers=auth).status_code == 404


def test_an_entity_parameter_that_fails_validation_is_400_with_the_array(client, auth):
    response = client.post("/rest/services/orderService/createOrder", headers=auth,
                           json={"order": {"date": "2025-03-01", "customer": {"id": CUSTOMER_0}}})
    assert response.status_code == 400
    assert {"path": "order.number", "message": "must not be null"}.items() <= response.json[0].items()


def test_a_structured_parameter_that_fails_validation_is_400_with_the_array(client, auth):
    response = client.post("/rest/services/orderService/summarize", headers=auth,
                           json={"criteria": {"fromDate": "yesterday", "statuses": ["NOPE"]}})
    assert response.status_code == 400
    assert sorted(v["path"] for v in response.json) == ["criteria.fromDate", "criteria.statuses",
                                                        "criteria.toDate"]


def test_the_token_is_not_taken_from_the_query_string(client, auth):
    token = auth["Authorization"].split()[1]
    response = client.get("/rest/services/orderService/calculateTotal",
                          query_string={"orderId": ORDER_0, "access_token": token})
    assert response.status_code == 401


def test_post_without_a_body_has_no_parameters_and_a_non_object_body_is_malformed(client, auth):
    empty = client.post("/rest/services/orderService/calculateTotal", headers=auth)
    assert empty.status_code == 400 and empty.json["details"] == "Invalid parameter value for orderId"
    array = client.post("/rest/services/orderService/calculateTotal", json=[ORDER_0], headers=auth)
    assert array.status_code == 400 and array.json["error"] == "Malformed request JSON data structure"


def test_head_is_answered_like_get(client, auth):
    response = client.head("/rest/services/orderService/calculateTotal", query_string={"orderId": ORDER_0},
                           headers=auth)
    assert response.status_code == 200 and response.get_data() == b""
