"""Row rules on writes (predicate policies): a create, update or delete the
caller's row-level roles do not allow is 403 and changes nothing, on every
write path. The demo user bruno is customer 1 and holds own-orders-writer."""
import dataclasses

import pytest

from conftest import bearer, demo_id, get_token, password_grant
from restsvc import ResourceRole, RowLevelRole

# bruno's tenant is south (odd numbers): another customer of his tenant, and its order
OWN_CUSTOMER, OTHER_CUSTOMER = demo_id("customer", 1), demo_id("customer", 3)
OWN_ORDER, OTHER_ORDER = demo_id("order", 1), demo_id("order", 3)     # CANCELLED; customer 3's
OWN_LINE = demo_id("line", "1-0")
PRODUCT = demo_id("product", 1)


def _refusal(action, entity="Order"):
    return {"error": "Forbidden", "details": f"resource: {entity}, type: entity, action: {action}"}


@pytest.fixture
def admin(client):
    return bearer(get_token(client))


@pytest.fixture
def bruno(client):
    response = password_grant(client, "bruno", "bruno-password")
    assert response.status_code == 200, response.get_data(as_text=True)
    return bearer(response.json["access_token"])


def _order(customer, number="B-1"):
    return {"number": number, "date": "2025-03-01", "status": "NEW", "customer": {"id": customer}}


def _orders_numbered(client, admin, number):
    found = client.get("/rest/entities/Order/search", headers=admin, query_string={
        "filter": f'{{"conditions":[{{"property":"number","operator":"=","value":"{number}"}}]}}'})
    return found.json


def _ship(client, admin, order_id):
    response = client.put(f"/rest/entities/Order/{order_id}", json={"status": "SHIPPED"},
                          headers=admin)
    assert response.status_code == 200


def _stored(client, admin, order_id):
    return client.get(f"/rest/entities/Order/{order_id}?fetchPlan=order-with-details",
                      headers=admin).json


def test_bruno_creates_an_order_for_his_own_customer(client, bruno, admin):
    response = client.post("/rest/entities/Order", json=_order(OWN_CUSTOMER), headers=bruno)
    assert response.status_code == 201, response.get_data(as_text=True)
    assert [o["id"] for o in _orders_numbered(client, admin, "B-1")] == [response.json["id"]]


def test_an_order_for_another_customer_is_refused_and_not_stored(client, bruno, admin):
    response = client.post("/rest/entities/Order", json=_order(OTHER_CUSTOMER), headers=bruno)
    assert response.status_code == 403
    assert response.json == _refusal("create")
    assert _orders_numbered(client, admin, "B-1") == []


def test_bruno_updates_his_own_order(client, bruno, admin):
    response = client.put(f"/rest/entities/Order/{OWN_ORDER}", json={"amount": "12.50"},
                          headers=bruno)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert str(_stored(client, admin, OWN_ORDER)["amount"]) == "12.5"


def test_moving_his_order_to_another_customer_is_refused(client, bruno, admin):
    response = client.put(f"/rest/entities/Order/{OWN_ORDER}",
                          json={"customer": {"id": OTHER_CUSTOMER}, "amount": "1.00"}, headers=bruno)
    assert response.status_code == 403
    assert response.json == _refusal("update")
    stored = _stored(client, admin, OWN_ORDER)
    assert stored["customer"]["id"] == OWN_CUSTOMER and str(stored["amount"]) != "1.00"


def test_a_shipped_order_cannot_be_changed_or_deleted(client, bruno, admin):
    _ship(client, admin, OWN_ORDER)
    before = _stored(client, admin, OWN_ORDER)
    response = client.put(f"/rest/entities/Order/{OWN_ORDER}", json={"amount": "1.00"},
                          headers=bruno)
    assert response.status_code == 403 and response.json == _refusal("update")
    response = client.delete(f"/rest/entities/Order/{OWN_ORDER}", headers=bruno)
    assert response.status_code == 403 and response.json == _refusal("delete")
    assert _stored(client, admin, OWN_ORDER) == before


def test_an_order_not_yet_shipped_may_be_deleted_by_its_customer(client, bruno, admin):
    assert client.delete(f"/rest/entities/Order/{OWN_ORDER}", headers=bruno).status_code == 204
    assert client.get(f"/rest/entities/Order/{OWN_ORDER}", headers=admin).status_code == 404


def test_his_customer_cannot_mark_an_order_shipped(client, bruno, admin):
    response = client.put(f"/rest/entities/Order/{OWN_ORDER}", json={"status": "SHIPPED"},
                          headers=bruno)
    assert response.status_code == 403
    assert _stored(client, admin, OWN_ORDER)["status"] == "PAID"


def test_a_bulk_create_with_one_refused_row_stores_none(client, bruno, admin):
    response = client.post("/rest/entities/Order", headers=bruno, json=[
        _order(OWN_CUSTOMER, "B-1"), _order(OTHER_CUSTOMER, "B-2"), _order(OWN_CUSTOMER, "B-3")])
    assert response.status_code == 403 and response.json == _refusal("create")
    for number in ("B-1", "B-2", "B-3"):
        assert _orders_numbered(client, admin, number) == []


def test_a_bulk_update_with_one_refused_row_changes_none(client, bruno, admin):
    second = demo_id("order", 21)
    _ship(client, admin, second)
    response = client.put("/rest/entities/Order", headers=bruno, json=[
        {"id": OWN_ORDER, "amount": "1.00"}, {"id": second, "amount": "2.00"}])
    assert response.status_code == 403
    assert str(_stored(client, admin, OWN_ORDER)["amount"]) != "1.00"


def test_a_bulk_delete_with_one_refused_row_deletes_none(client, bruno, admin):
    second = demo_id("order", 21)
    _ship(client, admin, second)
    response = client.delete("/rest/entities/Order", headers=bruno, json=[OWN_ORDER, second])
    assert response.status_code == 403 and response.json == _refusal("delete")
    assert client.get(f"/rest/entities/Order/{OWN_ORDER}", headers=admin).status_code == 200


def test_a_line_of_a_shipped_order_is_part_of_it_and_refused(client, bruno, admin):
    _ship(client, admin, OWN_ORDER)
    lines_before = _stored(client, admin, OWN_ORDER)["lines"]
    new_line = {"order": {"id": OWN_ORDER}, "product": {"id": PRODUCT}, "quantity": 1}
    response = client.post("/rest/entities/OrderLine", json=new_line, headers=bruno)
    assert response.status_code == 403 and response.json == _refusal("update")
    response = client.put(f"/rest/entities/OrderLine/{OWN_LINE}", json={"quantity": 9},
                          headers=bruno)
    assert response.status_code == 403
    response = client.delete(f"/rest/entities/OrderLine/{OWN_LINE}", headers=bruno)
    assert response.status_code == 403
    response = client.put(f"/rest/entities/Order/{OWN_ORDER}", headers=bruno,
                          json={"lines": [{"product": {"id": PRODUCT}, "quantity": 1}]})
    assert response.status_code == 403
    assert _stored(client, admin, OWN_ORDER)["lines"] == lines_before


def test_a_line_of_his_open_order_may_be_added(client, bruno, admin):
    new_line = {"order": {"id": OWN_ORDER}, "product": {"id": PRODUCT}, "quantity": 1}
    response = client.post("/rest/entities/OrderLine", json=new_line, headers=bruno)
    assert response.status_code == 201, response.get_data(as_text=True)


def test_a_line_for_another_customers_order_is_refused_and_not_stored(client, bruno, admin):
    before = len(_stored(client, admin, OTHER_ORDER)["lines"])
    new_line = {"order": {"id": OTHER_ORDER}, "product": {"id": PRODUCT}, "quantity": 1}
    response = client.post("/rest/entities/OrderLine", json=new_line, headers=bruno)
    assert response.status_code in (400, 403)     # he cannot even see that order (own-orders)
    assert len(_stored(client, admin, OTHER_ORDER)["lines"]) == before


# Write rules without the read filter: every order is visible, none is the caller's.
def _writer_rule():
    from restsvc.demo.roles import OWN_ORDERS_WRITER
    return dataclasses.replace(OWN_ORDERS_WRITER, code="t-own-orders-writer")


CLERK = ResourceRole("t-clerk", entities={"Order": "*", "OrderLine": "*", "Customer": "*",
                                          "Product": "read"},
                     attributes={"*": {"*": "modify"}})


def test_a_child_of_an_order_the_rule_refuses_is_refused_though_visible(client_with_roles, admin):
    c, auth = client_with_roles(CLERK, row_level=(_writer_rule(),))
    admin = bearer(get_token(c))
    before = _stored(c, admin, OTHER_ORDER)["lines"]
    new_line = {"order": {"id": OTHER_ORDER}, "product": {"id": PRODUCT}, "quantity": 1}
    response = c.post("/rest/entities/OrderLine", json=new_line, headers=auth)
    assert response.status_code == 403 and response.json == _refusal("update")
    line = before[0]["id"]
    assert c.put(f"/rest/entities/OrderLine/{line}", json={"quantity": 7},
                 headers=auth).status_code == 403
    assert c.delete(f"/rest/entities/OrderLine/{line}", headers=auth).status_code == 403
    assert _stored(c, admin, OTHER_ORDER)["lines"] == before


def test_a_rule_keyed_on_a_reference_makes_that_attribute_view_only(client_with_roles):
    c, auth = client_with_roles(CLERK, row_level=(_writer_rule(),))
    body = c.get("/rest/permissions", headers=auth).json
    levels = {item["target"]: item["value"] for item in body["entityAttributes"]}
    assert levels["Customer:userId"] == 1 and levels["Customer:name"] == 2


def test_a_service_cannot_store_an_order_for_another_customer(client, bruno, admin):
    url = "/rest/services/orderService/createOrder"
    lines = [{"product": {"id": PRODUCT}, "quantity": 2}]
    response = client.post(url, headers=bruno, json={"order": {**_order(OTHER_CUSTOMER),
                                                               "lines": lines}})
    assert response.status_code == 403 and response.json == _refusal("create")
    assert _orders_numbered(client, admin, "B-1") == []
    response = client.post(url, headers=bruno, json={"order": {**_order(OWN_CUSTOMER),
                                                               "lines": lines}})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert len(_orders_numbered(client, admin, "B-1")) == 1


# Many-to-many: a membership change is an update of the owning row.
PRODUCT_EDITOR = ResourceRole("t-product-editor", entities={"Product": "read,update",
                                                            "Tag": "read"},
                              attributes={"Product": {"*": "modify"}, "Tag": {"*": "view"}})
CHEAP_PRODUCTS = RowLevelRole("t-cheap-products", writes={"Product": {"update": {
    "conditions": [{"property": "price", "operator": "<", "value": 100}]}}})
EXPENSIVE, CHEAP = demo_id("product", 0), demo_id("product", 4)     # 249.00; 19.95


def _tag_ids(c, auth, product):
    body = c.get(f"/rest/entities/Product/{product}?fetchPlan=product-with-tags", headers=auth).json
    return sorted(tag["id"] for tag in body["tags"])


def test_a_membership_change_obeys_the_owners_update_rule(client_with_roles):
    c, auth = client_with_roles(PRODUCT_EDITOR, row_level=(CHEAP_PRODUCTS,))
    admin = bearer(get_token(c))
    before = _tag_ids(c, admin, EXPENSIVE)
    assert before
    response = c.put(f"/rest/entities/Product/{EXPENSIVE}", json={"tags": []}, headers=auth)
    assert response.status_code == 403 and response.json == _refusal("update", "Product")
    assert _tag_ids(c, admin, EXPENSIVE) == before
    response = c.put(f"/rest/entities/Product/{CHEAP}", json={"tags": [{"id": before[0]}]},
                     headers=auth)
    assert response.status_code == 200
    assert _tag_ids(c, admin, CHEAP) == [before[0]]


def _not_order_00001(row, session):
    return row.number != "00001"


def test_a_python_predicate_refuses_what_it_returns_false_for(client_with_roles):
    rule = RowLevelRole("t-keep-first", writes={"Order": {"delete": _not_order_00001}})
    c, auth = client_with_roles(CLERK, row_level=(rule,))
    response = c.delete(f"/rest/entities/Order/{demo_id('order', 0)}", headers=auth)
    assert response.status_code == 403 and response.json == _refusal("delete")
    assert c.delete(f"/rest/entities/Order/{OTHER_ORDER}", headers=auth).status_code == 204
    assert c.get(f"/rest/entities/Order/{demo_id('order', 0)}", headers=auth).status_code == 200


TAG_EDITOR = ResourceRole("t-tag-editor", entities={"Product": "read", "Tag": "read,update"},
                          attributes={"Product": {"*": "view"}, "Tag": {"*": "modify"}})


def _product_ids(c, auth, tag):
    plan = '{"extends":"_local","properties":["products"]}'
    body = c.get(f"/rest/entities/Tag/{tag}", query_string={"fetchPlan": plan}, headers=auth).json
    return sorted(product["id"] for product in body["products"])


def test_a_membership_change_from_the_other_side_obeys_the_members_update_rule(client_with_roles):
    c, auth = client_with_roles(TAG_EDITOR, row_level=(CHEAP_PRODUCTS,))
    admin = bearer(get_token(c))
    eco = 1                                     # products 0, 2, 6: 249.00, 1299.00, 79.00
    before = _product_ids(c, admin, eco)
    assert EXPENSIVE in before
    response = c.put(f"/rest/entities/Tag/{eco}", headers=auth,
                     json={"products": [{"id": p} for p in before if p != EXPENSIVE]})
    assert response.status_code == 403 and response.json == _refusal("update", "Product")
    assert _product_ids(c, admin, eco) == before
    response = c.put(f"/rest/entities/Tag/{eco}", headers=auth,
                     json={"products": [{"id": p} for p in before] + [{"id": CHEAP}]})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert _product_ids(c, admin, eco) == sorted(before + [CHEAP])


@pytest.mark.parametrize("writes, message", [
    ({"Order": {"update": {"conditions": [{"property": "nope", "operator": "=", "value": 1}]}}},
     "write rule of Order"),
    ({"Order": {"approve": {"conditions": []}}}, "create, update or delete"),
    ({"Nope": {"update": {"conditions": []}}}, "unknown entity Nope"),
    ({"Order": {"update": "status = 'NEW'"}}, "a search filter or a predicate"),
])
def test_a_mistaken_write_rule_stops_startup(make_app, writes, message):
    from restsvc.demo import application as demo
    from restsvc.settings import SettingsError
    application = dataclasses.replace(demo, row_level_roles=demo.row_level_roles + (
        RowLevelRole("t-mistaken", writes=writes),))
    with pytest.raises(SettingsError, match=message):
        make_app(application=application)


def test_a_restore_obeys_the_update_rule(client_with_roles):
    """A restore is an update of the row: a write rule refusing it holds."""
    restorer = ResourceRole("t-restorer", entities={"Product": "read,update,delete"},
                            attributes={"Product": {"*": "modify"}},
                            specifics=("rest.enabled", "rest.deleted.restore"))
    c, auth = client_with_roles(restorer, row_level=(CHEAP_PRODUCTS,))
    admin = bearer(get_token(c))
    for product in (EXPENSIVE, CHEAP):
        assert c.delete(f"/rest/entities/Product/{product}", headers=admin).status_code == 204
    response = c.post(f"/rest/entities/Product/{EXPENSIVE}/restore", headers=auth)
    assert response.status_code == 403 and response.json == _refusal("update", "Product")
    assert c.get(f"/rest/entities/Product/{EXPENSIVE}", headers=admin).status_code == 404
    assert c.post(f"/rest/entities/Product/{CHEAP}/restore", headers=auth).status_code == 200
    assert c.get(f"/rest/entities/Product/{CHEAP}", headers=admin).status_code == 200
