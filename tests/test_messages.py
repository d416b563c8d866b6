"""Messages API: captions per language, Accept-Language, default locale."""
import pytest
import yaml

from conftest import CONFIG_DIR


def test_entity_messages_in_german(client, auth):
    response = client.get("/rest/messages/entities/Order", headers={**auth, "Accept-Language": "de"})
    assert response.status_code == 200
    body = response.json
    assert body["Order"] == "Bestellung"
    assert body["Order.number"] == "Bestellnummer"
    assert list(body) == sorted(body)


def test_default_language_is_english(client, auth):
    body = client.get("/rest/messages/entities/Order", headers=auth).json
    assert body["Order"] == "Order" and body["Order.itemCount"] == "Item count"


@pytest.mark.parametrize("header, caption", [
    ("de-DE,de;q=0.9,en;q=0.5", "Bestellung"),
    ("fr", "Order"),
    ("fr, de;q=0.5", "Bestellung"),
])
def test_accept_language_picks_the_best_available_language(client, auth, header, caption):
    body = client.get("/rest/messages/entities/Order", headers={**auth, "Accept-Language": header}).json
    assert body["Order"] == caption


def test_all_entity_messages(client, auth):
    body = client.get("/rest/messages/entities", headers=auth).json
    assert body["Customer.email"] == "Email" and body["OrderLine.quantity"] == "Quantity"


def test_enum_messages(client, auth):
    body = client.get("/rest/messages/enums", headers={**auth, "Accept-Language": "de"}).json
    assert body["restsvc.demo.model.CustomerGrade.SILVER"] == "Silber"
    one = client.get("/rest/messages/enums/restsvc.demo.model.OrderStatus", headers=auth).json
    assert one == {"restsvc.demo.model.OrderStatus": "Order status",
                   "restsvc.demo.model.OrderStatus.CANCELLED": "Cancelled",
                   "restsvc.demo.model.OrderStatus.NEW": "New",
                   "restsvc.demo.model.OrderStatus.PAID": "Paid",
                   "restsvc.demo.model.OrderStatus.SHIPPED": "Shipped"}


def test_unknown_names_are_404(client, auth):
    assert client.get("/rest/messages/entities/Nope", headers=auth).json["error"] == "Entity not found"
    assert client.get("/rest/messages/enums/x.Nope", headers=auth).json["error"] == "Enum not found"


@pytest.mark.parametrize("language", ["en", "de"])
def test_every_demo_caption_is_translated(client, auth, language):
    bundle = yaml.safe_load((CONFIG_DIR / "messages" / f"{language}.yaml").read_text())
    headers = {**auth, "Accept-Language": language}
    shown = {**client.get("/rest/messages/entities", headers=headers).json,
             **client.get("/rest/messages/enums", headers=headers).json}
    demo_keys = {k for k in shown if k.split(".")[0] in ("Customer", "Product", "Order", "OrderLine",
                                                           "Country", "Tag")
                 or k.startswith("restsvc.demo.")}
    assert demo_keys and demo_keys <= set(bundle)
    assert all(shown[k] == bundle[k] for k in demo_keys)
