"""Soft delete: DELETE marks the row, reads leave it out, restore and purge by grant."""
import json

from conftest import bearer, demo_id, get_token
from reports_support import CUSTOMERS, csv_rows, run

ORDER = demo_id("order", 2)             # three lines
PRODUCT = demo_id("product", 1)


def _auditor(client):
    return bearer(get_token(client, "auditor", "auditor-secret"))


def _ids(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    return {row["id"] for row in response.json}


def _customer_of(client, auth, order):
    return client.get(f"/rest/entities/Order/{order}?fetchPlan=order-with-details",
                      headers=auth).json["customer"]["id"]


def test_delete_of_a_referenced_customer_marks_it_and_every_read_leaves_it_out(client, auth):
    customer = _customer_of(client, auth, ORDER)
    response = client.delete(f"/rest/entities/Customer/{customer}", headers=auth)
    assert response.status_code == 204, response.get_data(as_text=True)    # no 409: orders refer to it
    assert client.get(f"/rest/entities/Customer/{customer}", headers=auth).status_code == 404
    assert customer not in _ids(client.get("/rest/entities/Customer?limit=1000", headers=auth))
    everyone = json.dumps({"conditions": [{"property": "name", "operator": "notEmpty",
                                           "value": True}]})
    assert customer not in _ids(client.get("/rest/entities/Customer/search", headers=auth,
                                           query_string={"filter": everyone}))
    counted = client.get("/rest/entities/Customer/search/count", headers=auth,
                         query_string={"filter": everyone}).json
    assert counted == len(_ids(client.get("/rest/entities/Customer?limit=1000", headers=auth)))
    grade = client.get(f"/rest/entities/Customer/{customer}?includeDeleted=true",
                       headers=auth).json["grade"]
    by_query = client.get("/rest/queries/Customer/customersByGrades", headers=auth,
                          query_string={"grades": grade})
    assert customer not in _ids(by_query)
    names = [row[0] for row in csv_rows(run(client, auth, CUSTOMERS))]
    deleted = client.get(f"/rest/entities/Customer/{customer}?includeDeleted=true",
                         headers=auth).json
    assert deleted["name"] not in names
    assert deleted["deletedBy"] == "demo-client" and deleted["deletedDate"]
    # A live order still shows its customer by id (the reference stays valid).
    order = client.get(f"/rest/entities/Order/{ORDER}?fetchPlan=order-with-details",
                       headers=auth).json
    assert order["customer"]["id"] == customer


def test_a_service_does_not_see_a_deleted_order(client, auth):
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 204
    response = client.post("/rest/services/orderService/calculateTotal", headers=auth,
                           json={"orderId": ORDER})
    assert response.status_code == 404, response.get_data(as_text=True)


def test_include_deleted_shows_deleted_rows_to_the_grant_holder_only(client, auth, reader_auth):
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 204
    auditor = _auditor(client)
    assert ORDER not in _ids(client.get("/rest/entities/Order?limit=1000", headers=auditor))
    assert ORDER in _ids(client.get("/rest/entities/Order?limit=1000&includeDeleted=true",
                                    headers=auditor))
    loaded = client.get(f"/rest/entities/Order/{ORDER}?includeDeleted=true", headers=auditor)
    assert loaded.status_code == 200 and loaded.json["deletedDate"]
    for path in (f"/rest/entities/Order/{ORDER}?includeDeleted=true",
                 "/rest/entities/Order?includeDeleted=true"):
        response = client.get(path, headers=reader_auth)
        assert response.status_code == 403 and response.json["error"] == "Forbidden"


def test_restore_of_an_order_brings_its_lines_back(client, auth):
    plan = "?fetchPlan=order-with-details"
    lines = {line["id"] for line in
             client.get(f"/rest/entities/Order/{ORDER}{plan}", headers=auth).json["lines"]}
    assert len(lines) == 3
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 204
    assert not lines & _ids(client.get("/rest/entities/OrderLine?limit=1000", headers=auth))
    response = client.post(f"/rest/entities/Order/{ORDER}/restore", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["id"] == ORDER and response.json.get("deletedDate") is None
    restored = client.get(f"/rest/entities/Order/{ORDER}{plan}", headers=auth).json
    assert {line["id"] for line in restored["lines"]} == lines
    kinds = [i["kind"] for i in client.get(f"/rest/entities/Order/{ORDER}/history",
                                           headers=auth).json]
    assert kinds[:2] == ["RESTORE", "DELETE"]


def test_restore_of_a_live_row_is_409(client, auth):
    response = client.post(f"/rest/entities/Order/{ORDER}/restore", headers=auth)
    assert response.status_code == 409 and response.json["error"] == "Entity not deleted"


def test_restore_when_a_live_row_took_the_unique_key_is_409(client, auth):
    product = client.post("/rest/entities/Product", headers=auth,
                          json={"name": "Old", "sku": "SKU-1", "price": 1}).json["id"]
    twice = client.post("/rest/entities/Product", headers=auth,
                        json={"name": "Twin", "sku": "SKU-1", "price": 1})
    assert twice.status_code == 400                 # unique among live rows
    assert client.delete(f"/rest/entities/Product/{product}", headers=auth).status_code == 204
    again = client.post("/rest/entities/Product", headers=auth,
                        json={"name": "New", "sku": "SKU-1", "price": 2})
    assert again.status_code == 201, again.json     # a deleted row's SKU may be used again
    response = client.post(f"/rest/entities/Product/{product}/restore", headers=auth)
    assert response.status_code == 409 and response.json["error"] == "Unique key taken"
    assert client.get(f"/rest/entities/Product/{product}", headers=auth).status_code == 404


def test_purge_needs_its_grant_and_removes_the_row_for_good(client, auth):
    product = client.post("/rest/entities/Product", headers=auth,
                          json={"name": "Gone", "price": 1}).json["id"]
    assert client.delete(f"/rest/entities/Product/{product}", headers=auth).status_code == 204
    response = client.post(f"/rest/entities/Product/{product}/purge", headers=_auditor(client))
    assert response.status_code == 403
    assert client.post(f"/rest/entities/Product/{product}/purge", headers=auth).status_code == 204
    assert client.get(f"/rest/entities/Product/{product}?includeDeleted=true",
                      headers=auth).status_code == 404
    response = client.post(f"/rest/entities/Product/{PRODUCT}/purge", headers=auth)
    assert response.status_code == 409 and response.json["error"] == "Entity not deleted"


def test_restore_needs_its_grant(client, auth):
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 204
    assert client.post(f"/rest/entities/Order/{ORDER}/restore",
                       headers=_auditor(client)).status_code == 403
    response = client.post("/rest/entities/Tag/1/restore", headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Soft delete not used"


def test_a_deleted_line_leaves_its_orders_collection_and_collection_filters(client, auth):
    plan = "?fetchPlan=order-with-details"
    lines = client.get(f"/rest/entities/Order/{ORDER}{plan}", headers=auth).json["lines"]
    gone = lines[0]["id"]
    assert client.delete(f"/rest/entities/OrderLine/{gone}", headers=auth).status_code == 204
    left = client.get(f"/rest/entities/Order/{ORDER}{plan}", headers=auth).json["lines"]
    assert gone not in {line["id"] for line in left} and len(left) == len(lines) - 1
    crossing = json.dumps({"conditions": [{"property": "lines.id", "operator": "=",
                                           "value": gone}]})
    assert _ids(client.get("/rest/entities/Order/search", headers=auth,
                           query_string={"filter": crossing})) == set()


def test_include_deleted_on_search_and_count_for_the_grant_holder_only(client, auth, reader_auth):
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 204
    auditor = _auditor(client)
    every = json.dumps({"conditions": [{"property": "number", "operator": "notEmpty",
                                        "value": True}]})
    live = _ids(client.get("/rest/entities/Order/search", headers=auditor,
                           query_string={"filter": every}))
    assert ORDER not in live
    both = _ids(client.get("/rest/entities/Order/search", headers=auditor,
                           query_string={"filter": every, "includeDeleted": "true"}))
    assert both == live | {ORDER}
    posted = client.post("/rest/entities/Order/search?includeDeleted=true", headers=auditor,
                         json={"filter": json.loads(every)})
    assert ORDER in _ids(posted)
    counted = client.get("/rest/entities/Order/search/count", headers=auditor,
                         query_string={"filter": every, "includeDeleted": "true"})
    assert counted.status_code == 200 and counted.json == len(live) + 1
    for path in ("/rest/entities/Order/search", "/rest/entities/Order/search/count"):
        response = client.get(path, headers=reader_auth,
                              query_string={"filter": every, "includeDeleted": "true"})
        assert response.status_code == 403 and response.json["error"] == "Forbidden"


def test_a_service_delete_marks_and_the_auditor_changes_nothing(client, auth):
    auditor = _auditor(client)
    customer = _customer_of(client, auth, ORDER)
    assert client.put(f"/rest/entities/Order/{ORDER}", headers=auditor,
                      json={"number": "X"}).status_code == 403
    assert client.delete(f"/rest/entities/Order/{ORDER}", headers=auditor).status_code == 403
    assert client.delete(f"/rest/entities/Customer/{customer}",
                         headers=auditor).status_code == 403
    assert client.get(f"/rest/entities/Order/{ORDER}", headers=auth).status_code == 200
