"""Entities API, writing: create, update, delete, bulk, compositions, validation, locking."""

import pytest
from werkzeug.test import Client

from conftest import at_once, demo_id, get_token

CUSTOMER_0 = demo_id("customer", 0)
PRODUCT_0, PRODUCT_1 = demo_id("product", 0), demo_id("product", 1)


def new_order(**extra):
    return {"number": "N-1", "date": "2025-02-03", "customer": {"id": CUSTOMER_0},
            "status": "NEW", **extra}


def count(client, auth, entity):
    return int(client.get(f"/rest/entities/{entity}?limit=1&returnCount=true",
                          headers=auth).headers["X-Total-Count"])


def test_create_answers_201_with_location_and_the_short_form(client, auth):
    response = client.post("/rest/entities/Customer", json={"name": "Zoe Zeller", "grade": "GOLD"},
                           headers=auth)
    assert response.status_code == 201
    body = response.json
    assert list(body) == ["_entityName", "_instanceName", "id"]
    assert body["_instanceName"] == "Zoe Zeller"
    assert response.headers["Location"] == f"/rest/entities/Customer/{body['id']}"
    stored = client.get(f"/rest/entities/Customer/{body['id']}", headers=auth).json
    assert stored["grade"] == "GOLD" and stored["version"] == 1 and "createdDate" in stored


@pytest.mark.parametrize("body", [{"name": "Not written"}, [{"name": "Not written"}]])
def test_a_create_with_a_bad_query_parameter_writes_nothing(client, auth, body):
    """The query is checked before the write: a 400 leaves no row behind."""
    before = count(client, auth, "Customer")
    response = client.post("/rest/entities/Customer?responseFetchPlan=_base&returnNulls=maybe",
                           json=body, headers=auth)
    assert response.status_code == 400
    assert "returnNulls" in response.json["details"]
    assert count(client, auth, "Customer") == before


def test_read_only_and_unknown_attributes_are_ignored(client, auth):
    response = client.post("/rest/entities/Customer?responseFetchPlan=_local",
                           json={"name": "X", "createdDate": "1999-01-01T00:00:00", "version": 9,
                                 "shoeSize": 44}, headers=auth)
    body = response.json
    assert body["createdDate"] != "1999-01-01T00:00:00" and body["version"] == 1


def test_create_with_composition_lines_in_one_go(client, auth):
    body = new_order(lines=[{"product": {"id": PRODUCT_0}, "quantity": 2, "price": "249.00"},
                            {"product": {"id": PRODUCT_1}, "quantity": 1}])
    response = client.post("/rest/entities/Order?responseFetchPlan=order-with-details", json=body, headers=auth)
    assert response.status_code == 201
    order = response.json
    assert [line["quantity"] for line in order["lines"]] == [2, 1]
    assert order["itemCount"] == 3 and order["customer"]["id"] == CUSTOMER_0
    assert '"price":249.00' in response.get_data(as_text=True)


def test_a_missing_reference_is_400_naming_the_property(client, auth):
    body = new_order(customer={"id": "00000000-0000-0000-0000-000000000000"})
    response = client.post("/rest/entities/Order", json=body, headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Entity creation failed",
                             "details": "Referenced entity for property 'customer' is missing"}


def test_reference_and_collection_shapes_are_checked(client, auth):
    response = client.post("/rest/entities/Order", json=new_order(customer=CUSTOMER_0), headers=auth)
    assert response.json == {"error": "Attribute 'customer' refers to an entity. "
                                      "Property value must be a JSON object literal", "details": ""}
    response = client.post("/rest/entities/Order", json=new_order(lines={"quantity": 1}), headers=auth)
    assert response.json == {"error": "Attribute 'lines' refers to a collection. "
                                      "Property value must be a JSON array literal", "details": ""}


def test_body_that_is_not_json_is_malformed(client, auth):
    response = client.post("/rest/entities/Customer", data="{name:", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Malformed request JSON data structure", "details": ""}


def test_validation_errors_come_as_an_array_with_paths(client, auth):
    response = client.post("/rest/entities/Order", json={"date": "31.12.2024", "status": "LOST",
                                                          "number": "x" * 40}, headers=auth)
    assert response.status_code == 400
    by_path = {v["path"]: v for v in response.json}
    assert set(by_path) == {"date", "status", "number", "customer"}
    assert by_path["customer"] == {"message": "must not be null", "path": "customer", "invalidValue": None,
                                   "messageTemplate": "{jakarta.validation.constraints.NotNull.message}"}
    assert by_path["status"]["message"] == \
        "An error occurred while parsing enum. Class [restsvc.demo.model.OrderStatus]. Value [LOST]."
    assert by_path["date"]["invalidValue"] == "31.12.2024"
    assert by_path["number"]["message"] == "size must be between 0 and 32"


def test_application_validators_run(client, auth):
    response = client.post("/rest/entities/Customer", json={"name": "X", "birthDate": "2999-01-01"}, headers=auth)
    assert response.status_code == 400
    assert response.json == [{"message": "must not be in the future", "path": "birthDate", "invalidValue": None,
                              "messageTemplate": "{restsvc.validation.Custom}"}]


def test_bulk_create_is_one_transaction_with_indexed_paths(client, auth):
    before = count(client, auth, "Customer")
    response = client.post("/rest/entities/Customer", json=[{"name": "A"}, {"grade": "GOLD"}], headers=auth)
    assert response.status_code == 400
    assert response.json[0]["path"] == "entities[1].name"
    assert count(client, auth, "Customer") == before
    response = client.post("/rest/entities/Customer", json=[{"name": "A"}, {"name": "B"}], headers=auth)
    assert response.status_code == 201
    assert [c["_instanceName"] for c in response.json] == ["A", "B"]
    assert response.headers["Location"] == "/rest/entities/Customer"
    assert count(client, auth, "Customer") == before + 2


def test_create_with_an_existing_id_updates_that_row(client, auth):
    response = client.post("/rest/entities/Customer", json={"id": CUSTOMER_0, "email": "new@example.com"},
                           headers=auth)
    assert response.status_code == 201
    stored = client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json
    assert stored["email"] == "new@example.com" and stored["name"] == "Alice Adler"
    assert stored["version"] == 2


def test_create_with_a_client_supplied_id(client, auth):
    own = "3f1c2b7d-0000-4000-8000-000000000001"
    assert client.post("/rest/entities/Customer", json={"id": own, "name": "Mine"}, headers=auth).json["id"] == own


def test_partial_update_changes_only_given_attributes(client, auth):
    response = client.put(f"/rest/entities/Customer/{CUSTOMER_0}",
                          json={"id": demo_id("customer", 5), "grade": None, "birthDate": "1990-05-06"},
                          headers=auth)
    assert response.status_code == 200
    assert response.json == {"_entityName": "Customer", "_instanceName": "Alice Adler", "id": CUSTOMER_0}
    stored = client.get(f"/rest/entities/Customer/{CUSTOMER_0}?returnNulls=true", headers=auth).json
    assert stored["grade"] is None and stored["birthDate"] == "1990-05-06"
    assert stored["email"] == "alice.adler@example.com" and stored["version"] == 2


def test_update_replaces_composition_children(client, auth):
    order = demo_id("order", 2)        # three lines
    before = client.get(f"/rest/entities/Order/{order}?fetchPlan=order-with-details", headers=auth).json
    kept = before["lines"][0]["id"]
    body = {"lines": [{"id": kept, "quantity": 9}, {"product": {"id": PRODUCT_1}, "quantity": 1}]}
    response = client.put(f"/rest/entities/Order/{order}?responseFetchPlan=order-with-details",
                          json=body, headers=auth)
    assert response.status_code == 200
    lines = {line["id"]: line for line in response.json["lines"]}
    assert len(lines) == 2 and lines[kept]["quantity"] == 9
    assert lines[kept]["product"]["id"] == before["lines"][0]["product"]["id"]   # untouched
    [added] = [line for key, line in lines.items() if key != kept]
    assert added["product"]["id"] == PRODUCT_1
    removed = before["lines"][1]["id"]
    assert client.get(f"/rest/entities/OrderLine/{removed}", headers=auth).status_code == 404


def test_update_of_a_missing_row_is_404(client, auth):
    response = client.put("/rest/entities/Customer/00000000-0000-0000-0000-000000000002",
                          json={"name": "x"}, headers=auth)
    assert response.status_code == 404 and response.json["error"] == "Entity not found"


def test_bulk_update(client, auth):
    response = client.put("/rest/entities/Customer", json={"id": CUSTOMER_0}, headers=auth)
    assert response.json == {"error": "The body of bulk update request should be an array",
                             "details": "The body of bulk update request should be an array"}
    body = [{"id": CUSTOMER_0, "name": "One"}, {"id": demo_id("customer", 1), "name": "Two"}]
    response = client.put("/rest/entities/Customer", json=body, headers=auth)
    assert [c["_instanceName"] for c in response.json] == ["One", "Two"]
    body = [{"id": CUSTOMER_0, "name": "Three"}, {"id": "00000000-0000-0000-0000-000000000003", "name": "x"}]
    assert client.put("/rest/entities/Customer", json=body, headers=auth).status_code == 404
    assert client.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json["name"] == "One"


def test_delete_removes_the_row_and_its_compositions(client, auth):
    order = demo_id("order", 2)
    line = demo_id("line", "2-0")
    assert client.delete(f"/rest/entities/Order/{order}", headers=auth).status_code == 204
    assert client.get(f"/rest/entities/Order/{order}", headers=auth).status_code == 404
    assert client.get(f"/rest/entities/OrderLine/{line}", headers=auth).status_code == 404


def test_delete_of_a_referenced_row_is_409(client, auth):
    # Country is deleted for good (no soft delete): customers' addresses refer to it.
    response = client.delete("/rest/entities/Country/DE", headers=auth)     # Berlin, Hamburg
    assert response.status_code == 409
    assert response.json == {"error": "Delete policy violation",
                             "details": "Unable to delete Country because there are references from Customer"}


def test_bulk_delete_is_all_or_nothing(client, auth):
    a, b = (client.post("/rest/entities/Product", json={"name": n, "price": 1}, headers=auth).json["id"]
            for n in "ab")
    missing = "00000000-0000-0000-0000-000000000004"
    response = client.delete("/rest/entities/Product", json=[a, {"id": missing}], headers=auth)
    assert response.status_code == 404
    assert client.get(f"/rest/entities/Product/{a}", headers=auth).status_code == 200
    response = client.delete("/rest/entities/Product", json=[{"name": "no id"}], headers=auth)
    assert response.json == {"error": "Required attribute id is not presented",
                             "details": "Required attribute id is not presented"}
    assert client.delete("/rest/entities/Product", json=[a, {"id": b}], headers=auth).status_code == 204
    assert client.get(f"/rest/entities/Product/{b}", headers=auth).status_code == 404


@pytest.fixture
def locking(make_app):
    c = Client(make_app({"svc.rest.optimistic-locking-enabled": True}))
    return c, {"Authorization": f"Bearer {get_token(c)}"}


def test_optimistic_locking_refuses_a_stale_version(locking):
    c, auth = locking
    assert c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "v2", "version": 1},
                 headers=auth).status_code == 200
    response = c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "stale", "version": 1}, headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Optimistic lock"
    stored = c.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json
    assert stored["name"] == "v2" and stored["version"] == 2


def test_version_in_the_body_is_ignored_without_locking(make_app):
    c = Client(make_app({"svc.rest.optimistic-locking-enabled": False}))
    auth = {"Authorization": f"Bearer {get_token(c)}"}
    response = c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": "x", "version": 77}, headers=auth)
    assert response.status_code == 200


def test_the_shipped_configuration_refuses_a_stale_version_as_the_reference_does(client, auth):
    path = f"/rest/entities/Customer/{CUSTOMER_0}"
    assert client.put(path, json={"name": "first", "version": 1}, headers=auth).status_code == 200
    response = client.put(path, json={"name": "second", "version": 1}, headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Optimistic lock", "details":
                             f"Object of class [Customer] with identifier [{CUSTOMER_0}]: "
                             "optimistic locking failed"}
    assert client.get(path, headers=auth).json["name"] == "first"


def test_two_concurrent_writers_with_the_same_version_cannot_both_win(locking):
    c, auth = locking

    def write(n):
        return c.put(f"/rest/entities/Customer/{CUSTOMER_0}", json={"name": f"w{n}", "version": 1},
                     headers=auth).status_code
    assert sorted(at_once(write, 8)) == [200] + [400] * 7
    assert c.get(f"/rest/entities/Customer/{CUSTOMER_0}", headers=auth).json["version"] == 2


def test_a_body_that_is_not_an_entity_object_cannot_be_deserialized(client, auth):
    for method, path in (("post", "/rest/entities/Customer"),
                         ("put", f"/rest/entities/Customer/{CUSTOMER_0}")):
        response = getattr(client, method)(path, json=42, headers=auth)
        assert response.status_code == 400
        assert response.json == {"error": "Cannot deserialize an entity from JSON", "details": ""}


def test_a_child_of_another_parent_cannot_be_moved(client, auth):
    foreign_line = demo_id("line", "1-0")
    response = client.put(f"/rest/entities/Order/{demo_id('order', 0)}",
                          json={"lines": [{"id": foreign_line, "quantity": 1}]}, headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "Entity update failed"
    assert client.get(f"/rest/entities/OrderLine/{foreign_line}", headers=auth).status_code == 200


def test_a_missing_reference_on_update_is_entity_update_failed(client, auth):
    response = client.put(f"/rest/entities/Order/{demo_id('order', 0)}",
                          json={"customer": {"id": "00000000-0000-0000-0000-0000000000bb"}}, headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Entity update failed",
                             "details": "Referenced entity for property 'customer' is missing"}


def test_a_body_over_the_request_size_limit_is_413(make_app):
    c = Client(make_app({"svc.rest.max-request-size": "1KB"}))
    auth = {"Authorization": f"Bearer {get_token(c)}"}
    response = c.post("/rest/entities/Customer", data='{"name": "' + "x" * 2000 + '"}', headers=auth)
    assert response.status_code == 413
    assert response.json["error"] == "Request Entity Too Large"


@pytest.mark.parametrize("body", ["[" * 5000 + "]" * 5000, '{"name": "\\ud800"}', "\xff\xfe"])
def test_hostile_bodies_are_400(client, auth, body):
    response = client.post("/rest/entities/Customer", data=body.encode("utf-8", "surrogatepass"),
                           headers=auth)
    assert response.status_code == 400, response.get_data(as_text=True)


def test_decimals_must_fit_the_column(client, auth):
    response = client.post("/rest/entities/Product", json={"name": "Big", "price": 2 ** 70}, headers=auth)
    assert response.status_code == 400
    assert response.json[0]["message"] == "numeric value out of bounds (<10 digits>.<2 digits> expected)"
    response = client.post("/rest/entities/Product", json={"name": "Fine", "price": "0.005"}, headers=auth)
    assert response.status_code == 400 and response.json[0]["path"] == "price"


def test_concurrent_replacements_of_a_composition_leave_one_of_the_requested_sets(client, auth):
    """Each PUT replaces the order's lines with a line set of its own; run
    together, the order ends with exactly one of those sets, never a merge."""
    order = demo_id("order", 0)
    path = f"/rest/entities/Order/{order}"
    writers = 6

    def replace(n):
        line = {"product": {"id": PRODUCT_0}, "quantity": 100 + n}
        return client.put(path, json={"lines": [line]}, headers=auth).status_code
    for _ in range(3):
        assert at_once(replace, writers) == [200] * writers
        lines = client.get(f"{path}?fetchPlan=order-with-details", headers=auth).json["lines"]
        assert len(lines) == 1 and 100 <= lines[0]["quantity"] < 100 + writers
