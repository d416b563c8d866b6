"""Row-level rules reach compositions: an order's lines are visible and
writable only when the order is, wherever they are reached."""
import json

import pytest

from conftest import demo_id
from restsvc import ResourceRole, RowLevelRole

FULL = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
# Only the orders of GOLD customers (customers 2, 5, 8, ...: 15 orders, 33 lines).
GOLD_ORDERS = RowLevelRole("t-gold-orders", filters={
    "Order": {"conditions": [{"property": "customer.grade", "operator": "=", "value": "GOLD"}]}})
HIDDEN_ORDER = demo_id("order", 0)          # customer 0 is BRONZE
HIDDEN_LINE = demo_id("line", "0-0")
VISIBLE_ORDER = demo_id("order", 2)         # customer 2 is GOLD, three lines
VISIBLE_LINE = demo_id("line", "2-0")


@pytest.fixture
def gold(client_with_roles):
    return client_with_roles(FULL, row_level=(GOLD_ORDERS,))


def _visible_line_count(c, auth):
    orders = c.get("/rest/entities/Order?fetchPlan=order-with-details", headers=auth).json
    return sum(len(order["lines"]) for order in orders)


def test_lines_of_hidden_orders_are_absent_from_lists_searches_and_counts(gold):
    c, auth = gold
    expected = _visible_line_count(c, auth)
    assert expected == 33
    listed = c.get("/rest/entities/OrderLine?returnCount=true", headers=auth)
    assert len(listed.json) == 33 and listed.headers["X-Total-Count"] == "33"
    by_order = {"filter": json.dumps({"conditions": [
        {"property": "order", "operator": "=", "value": HIDDEN_ORDER}]})}
    assert c.get("/rest/entities/OrderLine/search", query_string=by_order, headers=auth).json == []
    assert c.get("/rest/entities/OrderLine/search/count", query_string=by_order, headers=auth).json == 0
    response = c.post("/rest/entities/OrderLine/search", json={"filter": {}, "returnCount": True},
                      headers=auth)
    assert response.headers["X-Total-Count"] == "33"


def test_a_line_of_a_hidden_order_cannot_be_loaded_updated_or_deleted(gold, auth, client):
    c, tester = gold
    path = f"/rest/entities/OrderLine/{HIDDEN_LINE}"
    assert c.get(path, headers=tester).status_code == 404
    response = c.put(path, json={"quantity": 99}, headers=tester)
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found",
                             "details": f"Entity OrderLine with id {HIDDEN_LINE} not found"}
    assert c.delete(path, headers=tester).status_code == 404
    assert c.delete("/rest/entities/OrderLine", json=[HIDDEN_LINE], headers=tester).status_code == 404
    stored = client.get(path, headers=auth).json
    assert stored["quantity"] == 1 and stored["version"] == 1


def test_a_line_of_a_visible_order_stays_writable(gold):
    c, auth = gold
    path = f"/rest/entities/OrderLine/{VISIBLE_LINE}"
    assert c.get(path, headers=auth).status_code == 200
    assert c.put(path, json={"quantity": 7}, headers=auth).status_code == 200
    assert c.get(path, headers=auth).json["quantity"] == 7


def test_nested_plans_reach_lines_only_through_visible_orders(gold):
    c, auth = gold
    line_plan = json.dumps({"entity": "OrderLine", "properties": [
        "quantity", {"name": "order", "fetchPlan": {"properties": [
            "number", {"name": "lines", "fetchPlan": "_local"}]}}]})
    lines = c.get("/rest/entities/OrderLine", query_string={"fetchPlan": line_plan}, headers=auth).json
    assert len(lines) == 33 and all(line["order"]["lines"] for line in lines)


def test_composition_rule_applies_to_predefined_queries(client_with_roles):
    c, auth = client_with_roles(FULL, row_level=(GOLD_ORDERS,))
    response = c.get("/rest/queries/OrderLine/all?returnCount=true", headers=auth)
    assert response.status_code == 200 and response.headers["X-Total-Count"] == "33"
