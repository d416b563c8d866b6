"""Entities API under entity, attribute and row-level policies."""
import json

import pytest

from conftest import demo_id, get_token
from restsvc import ResourceRole, RowLevelRole

CUSTOMER_0 = demo_id("customer", 0)      # BRONZE
CUSTOMER_2 = demo_id("customer", 2)      # GOLD

READER = ResourceRole(
    "t-reader", entities={"Customer": "read", "Order": "read", "OrderLine": "read", "Product": "read"},
    attributes={"Customer": {"name": "view", "grade": "view", "birthDate": "view"},
                "Order": {"*": "view"}, "OrderLine": {"*": "view"}, "Product": {"*": "view"}})
CLERK = ResourceRole(
    "t-clerk", entities={"Customer": "read,update,create", "Order": "*"},
    attributes={"Customer": {"*": "view", "name": "modify"}, "Order": {"*": "modify"}})
GOLD_ONLY = RowLevelRole("t-gold", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]},
    "Order": {"conditions": [{"property": "customer.grade", "operator": "=", "value": "GOLD"}]}})
FULL = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})


@pytest.fixture
def reader(client_with_roles):
    return client_with_roles(READER)


@pytest.mark.parametrize("method, path, body, error", [
    ("get", "/rest/entities/User", None, "Reading"),
    ("get", f"/rest/entities/Customer/{CUSTOMER_0}", None, None),
    ("post", "/rest/entities/Customer", {"name": "x"}, "Creation"),
    ("put", f"/rest/entities/Customer/{CUSTOMER_0}", {"name": "x"}, "Updating"),
    ("delete", f"/rest/entities/Customer/{CUSTOMER_0}", None, "Deletion"),
    ("get", "/rest/entities/Customer/search?filter={}", None, None),
    ("post", "/rest/entities/Customer/search/count", {"filter": {}}, None),
])
def test_entity_operations_need_their_policy(reader, method, path, body, error):
    c, auth = reader
    response = getattr(c, method)(path, json=body, headers=auth)
    if error is None:
        assert response.status_code == 200
        return
    if path.endswith("/User") and response.status_code == 404:
        pytest.skip("no User entity in this build")
    assert response.status_code == 403
    entity = path.split("/")[3]
    assert response.json == {"error": f"{error} forbidden", "details": f"{error} of the {entity} is forbidden"}


def test_read_forbidden_entity_everywhere(client_with_roles):
    c, auth = client_with_roles(ResourceRole("t-none", entities={"Product": "create"}))
    for path in ("/rest/entities/Customer", f"/rest/entities/Customer/{CUSTOMER_0}",
                 "/rest/entities/Customer/search?filter={}", "/rest/entities/Customer/search/count?filter={}"):
        response = c.get(path, headers=auth)
        assert response.status_code == 403 and response.json["error"] == "Reading forbidden", path


def test_create_without_read_answers_only_the_id(client_with_roles):
    c, auth = client_with_roles(ResourceRole("t-maker", entities={"Product": "create"},
                                             attributes={"Product": {"*": "modify"}}))
    response = c.post("/rest/entities/Product", json={"name": "Secret", "price": 1}, headers=auth)
    assert response.status_code == 201 and set(response.json) == {"_entityName", "id"}


def test_hidden_attributes_never_appear(reader):
    c, auth = reader
    body = c.get(f"/rest/entities/Customer/{CUSTOMER_0}?returnNulls=true", headers=auth).json
    assert "email" not in body and "photo" not in body and body["name"] == "Alice Adler"
    order = c.get(f"/rest/entities/Order/{demo_id('order', 0)}?fetchPlan=order-with-details",
                  headers=auth).json
    assert order["customer"]["name"] == "Alice Adler" and "email" not in order["customer"]


def test_hidden_attributes_cannot_be_filtered_or_sorted(reader):
    c, auth = reader
    query = {"filter": json.dumps({"conditions": [{"property": "email", "operator": "startsWith", "value": "a"}]})}
    response = c.get("/rest/entities/Customer/search", query_string=query, headers=auth)
    assert response.status_code == 400
    assert response.json["details"] == "Property for Customer not found: email"
    via_ref = {"filter": json.dumps({"conditions": [{"property": "customer.email", "operator": "=", "value": "a"}]})}
    assert c.get("/rest/entities/Order/search", query_string=via_ref, headers=auth).json["details"] == \
        "Property for Order not found: customer.email"
    unsorted = [r["id"] for r in c.get("/rest/entities/Customer", headers=auth).json]
    assert [r["id"] for r in c.get("/rest/entities/Customer?sort=-email", headers=auth).json] == unsorted


def test_instance_name_from_a_hidden_attribute_is_left_out(client_with_roles):
    role = ResourceRole("t-noname", entities={"Customer": "read"}, attributes={"Customer": {"grade": "view"}})
    c, auth = client_with_roles(role)
    body = c.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json
    assert body == {"_entityName": "Customer", "id": CUSTOMER_0, "version": 1, "grade": "BRONZE"}


def test_references_to_unreadable_entities_are_left_out(client_with_roles):
    role = ResourceRole("t-orders", entities={"Order": "read"}, attributes={"Order": {"*": "view"}})
    c, auth = client_with_roles(role)
    body = c.get(f"/rest/entities/Order/{demo_id('order', 0)}?fetchPlan=order-with-details", headers=auth).json
    assert body["number"] == "00001"
    assert "customer" not in body and "lines" not in body


def test_attributes_without_modify_are_ignored_on_write(client_with_roles):
    c, auth = client_with_roles(CLERK)
    response = c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "Renamed", "email": "x@y.z"},
                     headers=auth)
    assert response.status_code == 200
    body = c.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json
    assert body["name"] == "Renamed" and body["email"] == "alice.adler@example.com"


def test_nested_compositions_need_the_child_entity_policies(client_with_roles):
    c, auth = client_with_roles(CLERK)
    body = {"number": "C1", "date": "2025-01-01", "customer": {"id": CUSTOMER_0},
            "lines": [{"product": {"id": demo_id("product", 0)}, "quantity": 1}]}
    response = c.post("/rest/entities/Order", json=body, headers=auth)
    assert response.status_code == 403 and response.json["error"] == "Creation forbidden"
    assert response.json["details"] == "Creation of the OrderLine is forbidden"


@pytest.fixture
def gold(client_with_roles):
    return client_with_roles(FULL, row_level=(GOLD_ONLY,))


def test_rows_hidden_by_row_level_roles_are_absent_everywhere(gold):
    c, auth = gold
    assert c.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).status_code == 404
    assert c.get(f"/rest/entities/Customer/{CUSTOMER_2}", headers=auth).status_code == 200
    listed = c.get("/rest/entities/Customer?returnCount=true", headers=auth)
    assert {r["grade"] for r in listed.json} == {"GOLD"}
    assert listed.headers["X-Total-Count"] == str(len(listed.json)) == "6"
    assert c.get("/rest/entities/Customer/search/count?filter={}", headers=auth).json == 6
    assert c.get("/rest/entities/Order?returnCount=true&limit=1", headers=auth).headers["X-Total-Count"] == "15"


def test_references_to_hidden_rows_are_null(client_with_roles):
    gold_customers = RowLevelRole("t-gold-customers", filters={"Customer": GOLD_ONLY.filters["Customer"]})
    c, auth = client_with_roles(FULL, row_level=(gold_customers,))
    plan = json.dumps({"entity": "Order", "properties": ["number", {"name": "customer", "fetchPlan": "_local"}]})
    orders = c.get("/rest/entities/Order", query_string={"fetchPlan": plan, "returnNulls": "true"},
                   headers=auth).json
    visible = [order for order in orders if order["customer"] is not None]
    hidden = [order for order in orders if order["customer"] is None]
    assert len(visible) == 15 and len(hidden) == 35


def test_hidden_rows_cannot_be_changed_referenced_or_deleted(gold):
    c, auth = gold
    assert c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "x"}, headers=auth).status_code == 404
    assert c.delete(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).status_code == 404
    body = {"number": "H1", "date": "2025-01-01", "customer": {"id": CUSTOMER_0}}
    response = c.post("/rest/entities/Order", json=body, headers=auth)
    assert response.json["details"] == "Referenced entity for property 'customer' is missing"


def test_filters_and_sorts_through_hidden_rows_reveal_nothing(gold):
    c, auth = gold
    query = {"filter": json.dumps({"conditions": [
        {"property": "order.customer.name", "operator": "=", "value": "Alice Adler"}]})}
    assert c.get("/rest/entities/OrderLine/search", query_string=query, headers=auth).json == []
    plan = json.dumps({"entity": "OrderLine", "properties": ["quantity"]})
    by_id = [r["id"] for r in c.get("/rest/entities/OrderLine", query_string={"fetchPlan": plan}, headers=auth).json]
    sorted_rows = c.get("/rest/entities/OrderLine", query_string={"fetchPlan": plan, "sort": "order.customer.name"},
                        headers=auth).json
    assert sorted(r["id"] for r in sorted_rows) == sorted(by_id)


def test_session_username_in_row_level_filters(client_with_roles):
    own = RowLevelRole("t-own", filters={"Customer": {"conditions": [
        {"property": "name", "operator": "=", "value": ":session$username"}]}})
    c, auth = client_with_roles(FULL, row_level=(own,))
    assert c.get("/rest/entities/Customer", headers=auth).json == []
    admin = {"Authorization": f"Bearer {get_token(c)}"}
    c.post("/rest/entities/Customer", json={"name": "tester"}, headers=admin)
    assert [r["name"] for r in c.get("/rest/entities/Customer", headers=auth).json] == ["tester"]


def test_disabling_a_user_through_the_entities_api_revokes_its_tokens(client, auth, alice_auth):
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 200
    query = {"filter": json.dumps({"conditions": [{"property": "username", "operator": "=", "value": "alice"}]})}
    [alice] = client.get("/rest/entities/User/search", query_string=query, headers=auth).json
    assert "password" not in alice and "roles" not in alice
    response = client.put(f"/rest/entities/User/{alice['id']}", json={"active": False, "password": "x"},
                          headers=auth)
    assert response.status_code == 200
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_deleting_a_user_through_the_entities_api_revokes_its_tokens(client, auth, alice_auth):
    query = {"filter": json.dumps({"conditions": [{"property": "username", "operator": "=", "value": "alice"}]})}
    [alice] = client.get("/rest/entities/User/search", query_string=query, headers=auth).json
    assert client.delete(f"/rest/entities/User/{alice['id']}", headers=auth).status_code == 204
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_creating_a_row_the_caller_cannot_see_afterwards_still_answers_201(gold):
    c, auth = gold
    response = c.post("/rest/entities/Customer?responseFetchPlan=_local",
                      json={"name": "Bronze newcomer", "grade": "BRONZE"}, headers=auth)
    assert response.status_code == 201
    assert set(response.json) == {"_entityName", "id"}
    assert c.get(f"/rest/entities/Customer/{response.json['id']}", headers=auth).status_code == 404


def test_without_the_update_policy_a_missing_row_is_403_too(reader):
    c, auth = reader
    response = c.put("/rest/entities/Customer/00000000-0000-0000-0000-0000000000aa", json={"name": "x"},
                     headers=auth)
    assert response.status_code == 403 and response.json["error"] == "Updating forbidden"


def test_creating_with_the_id_of_a_hidden_row_answers_as_updating_it(gold, client, auth):
    c, tester = gold
    updated = c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "x"}, headers=tester)
    created = c.post("/rest/entities/Customer", json={"id": CUSTOMER_0, "name": "x"}, headers=tester)
    assert (created.status_code, created.json) == (updated.status_code, updated.json) == (
        404, {"error": "Entity not found", "details": f"Entity Customer with id {CUSTOMER_0} not found"})
    hidden_line = demo_id("line", "0-0")
    order = {"number": "N1", "date": "2025-01-01", "customer": {"id": CUSTOMER_2},
             "lines": [{"id": hidden_line, "product": {"id": demo_id("product", 0)}, "quantity": 5}]}
    nested = c.post("/rest/entities/Order", json=order, headers=tester)
    assert nested.status_code == 404 and "database" not in nested.get_data(as_text=True)
    assert client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json["name"] == "Alice Adler"
    assert client.get(f"/rest/entities/OrderLine/{hidden_line}", headers=auth).json["quantity"] == 1
