"""The demo's business validators: answered 400 with the validation array, nothing stored."""
import pytest

from conftest import demo_id

CUSTOM = "{restsvc.validation.Custom}"
PRODUCT_0, LINE_0 = demo_id("product", 0), demo_id("line", "0-0")


def violation(path, message):
    return {"message": message, "messageTemplate": CUSTOM, "path": path, "invalidValue": None}


def total(client, auth, entity):
    return int(client.get(f"/rest/entities/{entity}?limit=1&returnCount=true",
                          headers=auth).headers["X-Total-Count"])


@pytest.mark.parametrize("quantity", [-3, 0])
def test_an_order_line_needs_a_positive_quantity(client, auth, quantity):
    orders, lines = total(client, auth, "Order"), total(client, auth, "OrderLine")
    order = {"number": "V-1", "date": "2025-02-03", "customer": {"id": demo_id("customer", 0)},
             "lines": [{"product": {"id": PRODUCT_0}, "quantity": 2},
                       {"product": {"id": PRODUCT_0}, "quantity": quantity}]}
    response = client.post("/rest/entities/Order", json=order, headers=auth)
    assert response.status_code == 400
    assert response.json == [violation("lines[1].quantity", "must be greater than 0")]
    assert (total(client, auth, "Order"), total(client, auth, "OrderLine")) == (orders, lines)


def test_an_update_to_a_non_positive_quantity_is_refused(client, auth):
    path = f"/rest/entities/OrderLine/{LINE_0}"
    before = client.get(path, headers=auth).json
    response = client.put(path, json={"quantity": 0}, headers=auth)
    assert response.status_code == 400
    assert response.json == [violation("quantity", "must be greater than 0")]
    assert client.get(path, headers=auth).json == before


def test_a_product_price_is_never_negative(client, auth):
    products = total(client, auth, "Product")
    response = client.post("/rest/entities/Product", json={"name": "Refund", "price": "-0.01"},
                           headers=auth)
    assert response.status_code == 400
    assert response.json == [violation("price", "must be greater than or equal to 0")]
    assert total(client, auth, "Product") == products
    path = f"/rest/entities/Product/{PRODUCT_0}"
    before = client.get(path, headers=auth).json
    response = client.put(path, json={"price": -5}, headers=auth)
    assert response.status_code == 400
    assert response.json == [violation("price", "must be greater than or equal to 0")]
    assert client.get(path, headers=auth).json == before


def test_a_free_product_and_a_positive_quantity_are_accepted(client, auth):
    response = client.post("/rest/entities/Product", json={"name": "Sample", "price": "0"},
                           headers=auth)
    assert response.status_code == 201
    response = client.put(f"/rest/entities/OrderLine/{LINE_0}", json={"quantity": 1}, headers=auth)
    assert response.status_code == 200
