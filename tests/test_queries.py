"""Queries API: the shipped demo queries, typed parameters, paging, count and errors."""
import pytest

from conftest import demo_id

CUSTOMER_0 = demo_id("customer", 0)     # orders 0, 20 and 40


def run(client, auth, path, **params):
    response = client.get(f"/rest/queries/{path}", query_string=params, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def numbers(rows):
    return sorted(row["number"] for row in rows)


def test_descriptors_list_the_queries_of_an_entity(client, auth):
    response = client.get("/rest/queries/Order", headers=auth)
    assert response.status_code == 200
    by_name = {d["name"]: d for d in response.json}
    assert set(by_name) == {"ordersByStatus", "ordersOfCustomer", "ordersBetween", "ordersOfMonth"}
    assert by_name["ordersByStatus"] == {
        "name": "ordersByStatus", "entityName": "Order", "viewName": "order-with-details",
        "fetchPlanName": "order-with-details", "limit": None, "offset": None,
        "params": [{"name": "status", "type": "restsvc.demo.model.OrderStatus"}]}


def test_an_entity_without_queries_lists_none(client, auth):
    assert run(client, auth, "OrderLine") == []


def test_get_with_an_enum_parameter_uses_the_query_fetch_plan(client, auth):
    rows = run(client, auth, "Order/ordersByStatus", status="PAID")
    assert len(rows) == 13 and {row["status"] for row in rows} == {"PAID"}
    assert rows[0]["customer"]["_entityName"] == "Customer" and rows[0]["lines"]


def test_post_takes_the_parameters_as_a_json_object(client, auth):
    response = client.post("/rest/queries/Order/ordersByStatus", json={"status": "SHIPPED", "extra": 1},
                           headers=auth)
    assert response.status_code == 200 and len(response.json) == 12


def test_entity_parameter_takes_an_id_or_an_object(client, auth):
    by_id = run(client, auth, "Order/ordersOfCustomer", customer=CUSTOMER_0)
    assert numbers(by_id) == ["00001", "00021", "00041"]
    by_object = client.post("/rest/queries/Order/ordersOfCustomer", json={"customer": {"id": CUSTOMER_0}},
                            headers=auth)
    assert numbers(by_object.json) == numbers(by_id)


def test_date_parameters(client, auth):
    rows = run(client, auth, "Order/ordersBetween", **{"from": "2024-01-01", "to": "2024-01-10"})
    assert sorted(row["date"] for row in rows) == ["2024-01-01", "2024-01-04", "2024-01-07", "2024-01-10"]


@pytest.mark.parametrize("grades", [['["GOLD","SILVER"]'], ["GOLD", "SILVER"]])
def test_array_parameter_in_the_query_string_as_json_or_repeated(client, auth, grades):
    response = client.get("/rest/queries/Customer/customersByGrades",
                          query_string=[("grades", g) for g in grades], headers=auth)
    assert len(response.json) == 13 and {r["grade"] for r in response.json} == {"GOLD", "SILVER"}


def test_array_parameters_in_a_body_and_java_type_names(client, auth):
    ids = [demo_id("product", 1), demo_id("product", 8), "00000000-0000-0000-0000-000000000000"]
    response = client.post("/rest/queries/Product/productsByIds", json={"ids": ids}, headers=auth)
    assert sorted(r["name"] for r in response.json) == ["Heat pump", "Inverter"]
    empty = client.post("/rest/queries/Product/productsByIds", json={"ids": []}, headers=auth)
    assert empty.status_code == 200 and empty.json == []


def test_function_query(client, auth):
    rows = run(client, auth, "Order/ordersOfMonth", year="2024", month="2")
    assert len(rows) == 9 and all(row["date"].startswith("2024-02") for row in rows)
    response = client.get("/rest/queries/Order/ordersOfMonth?year=2024&month=13", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Invalid parameter value", "details": "Invalid parameter value for month"}


def test_all_is_an_implicit_query_with_instance_names(client, auth):
    rows = run(client, auth, "Customer/all")
    assert len(rows) == 20
    assert set(rows[0]) == {"_entityName", "_instanceName", "id", "name"}
    assert client.get("/rest/queries/Customer/all/count", headers=auth).json == 20


def test_count_is_a_bare_number(client, auth):
    response = client.get("/rest/queries/Order/ordersByStatus/count?status=NEW", headers=auth)
    assert response.get_data(as_text=True) == "13"
    assert response.content_type == "application/json;charset=UTF-8"
    posted = client.post("/rest/queries/Order/ordersByStatus/count", json={"status": "CANCELLED"}, headers=auth)
    assert posted.json == 12


def test_count_as_text_when_asked(client, auth):
    response = client.get("/rest/queries/Order/ordersByStatus/count?status=NEW",
                          headers={**auth, "Accept": "text/plain"})
    assert response.content_type == "text/plain;charset=UTF-8" and response.get_data(as_text=True) == "13"


def test_return_count_and_paging(client, auth):
    response = client.get("/rest/queries/Order/ordersByStatus?status=NEW&limit=2&offset=1&returnCount=true",
                          headers=auth)
    assert response.headers["X-Total-Count"] == "13"
    first_three = run(client, auth, "Order/ordersByStatus", status="NEW", limit="3")
    assert [r["id"] for r in response.json] == [r["id"] for r in first_three[1:]]
    assert "X-Total-Count" not in client.get("/rest/queries/Order/all", headers=auth).headers


def test_fetch_plan_from_the_request_overrides_the_query(client, auth):
    rows = run(client, auth, "Order/ordersByStatus", status="NEW", fetchPlan="_local")
    assert "customer" not in rows[0] and "lines" not in rows[0]
    rows = run(client, auth, "Order/ordersByStatus", status="NEW", returnNulls="true", fetchPlan="_local")
    assert all("amount" in row for row in rows)


@pytest.mark.parametrize("plan", ["nope", '{"entity":"Order","properties":["number"]}'])
def test_queries_take_fetch_plan_names_only(client, auth, plan):
    response = client.get("/rest/queries/Order/ordersByStatus", query_string={"status": "NEW", "fetchPlan": plan},
                          headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Fetch plan not found",
                             "details": f"Fetch plan {plan} for entity Order not found"}


def test_unknown_query_is_404(client, auth):
    response = client.get("/rest/queries/Order/nope", headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Query not found", "details": "Query with name nope for entity Order not found"}
    assert client.post("/rest/queries/Customer/ordersByStatus/count", json={}, headers=auth).status_code == 404


@pytest.mark.parametrize("path", ["/rest/queries/Nope", "/rest/queries/Nope/all", "/rest/queries/Nope/x/count"])
def test_unknown_entity_is_404(client, auth, path):
    response = client.get(path, headers=auth)
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found", "details": "Entity Nope not found"}


@pytest.mark.parametrize("method", ["get", "post"])
def test_missing_parameter_is_400(client, auth, method):
    response = getattr(client, method)("/rest/queries/Order/ordersBetween", query_string={"from": "2024-01-01"},
                                       json={"from": "2024-01-01", "to": None}, headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Query parameter not found", "details": "Query parameter to not found"}


@pytest.mark.parametrize("path, body", [
    ("Order/ordersByStatus", {"status": "LOST"}),
    ("Order/ordersByStatus", {"status": ["NEW"]}),
    ("Order/ordersOfCustomer", {"customer": "not-an-id"}),
    ("Order/ordersOfCustomer", {"customer": {"id": 5}}),
    ("Order/ordersBetween", {"from": "2024-02-30", "to": "2024-03-01"}),
    ("Order/ordersOfMonth", {"year": "MMXXIV", "month": 1}),
    ("Order/ordersOfMonth", {"year": 2024.5, "month": 1}),
    ("Customer/customersByGrades", {"grades": "GOLD"}),
    ("Customer/customersByGrades", {"grades": ["GOLD", "TIN"]}),
    ("Product/productsByIds", {"ids": ["x"]}),
    ("Product/productsByIds", {"ids": [demo_id("product", 1)] * 1001}),
])
def test_bad_parameter_value_is_400(client, auth, path, body):
    response = client.post(f"/rest/queries/{path}", json=body, headers=auth)
    assert response.status_code == 400, response.get_data(as_text=True)
    name = next(iter(body)) if path != "Order/ordersBetween" else "from"
    assert response.json == {"error": "Invalid parameter value", "details": f"Invalid parameter value for {name}"}


def test_malformed_json_array_in_the_query_string_is_400(client, auth):
    response = client.get("/rest/queries/Customer/customersByGrades", query_string={"grades": '["GOLD",'},
                          headers=auth)
    assert response.json == {"error": "Invalid parameter value", "details": "Invalid parameter value for grades"}


@pytest.mark.parametrize("body", [b"[1]", b"{nope", b'"x"'])
def test_post_body_must_be_a_json_object(client, auth, body):
    response = client.post("/rest/queries/Order/ordersByStatus", data=body,
                           headers={**auth, "Content-Type": "application/json"})
    assert response.status_code == 400 and response.json["error"] == "Malformed request JSON data structure"


def test_post_without_a_body_runs_a_query_without_parameters(client, auth):
    response = client.post("/rest/queries/Product/all", headers=auth)
    assert response.status_code == 200 and len(response.json) == 10


def test_limit_above_the_maximum_is_400(client, auth):
    response = client.get("/rest/queries/Customer/all?limit=10001", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "The value of limit exceeded", "details":
                             "The value of the limit exceeds the maximum possible value from application.properties"}


def test_deeply_nested_json_array_parameter_is_400(client, auth):
    response = client.get("/rest/queries/Product/productsByIds", query_string={"ids": "[" * 5000}, headers=auth)
    assert response.json == {"error": "Invalid parameter value", "details": "Invalid parameter value for ids"}
