"""Services API: every parameter type by GET and POST, bad values of each,
every result kind, errors raised by services and rollback, naming rule."""
import dataclasses
import datetime
import decimal
import uuid
from typing import Optional

import pytest
from werkzeug.test import Client

from conftest import demo_id, get_token
from restsvc import (Caller, Conflict, DataAccess, FileRef, rest_method, rest_service)
from restsvc.demo import application as demo
from restsvc.demo.model import Customer, Order, OrderStatus

ORDER_0 = demo_id("order", 0)
REF = "fs://2024/01/31/a.png?name=a%20b.png"


@dataclasses.dataclass
class Range:
    low: int
    high: Optional[int] = None
    days: Optional[list[datetime.date]] = None


@rest_service
class TypesService:
    """Each method echoes its parameter: the text form comes back as sent."""

    @rest_method
    def text(self, value: str) -> str:
        return value

    @rest_method
    def whole(self, value: int) -> int:
        return value

    @rest_method
    def double(self, value: float) -> float:
        return value

    @rest_method
    def amount(self, value: decimal.Decimal) -> decimal.Decimal:
        return value

    @rest_method
    def flag(self, value: bool) -> bool:
        return value

    @rest_method
    def ident(self, value: uuid.UUID) -> uuid.UUID:
        return value

    @rest_method
    def day(self, value: datetime.date) -> datetime.date:
        return value

    @rest_method
    def moment(self, value: datetime.datetime) -> datetime.datetime:
        return value

    @rest_method
    def clock(self, value: datetime.time) -> datetime.time:
        return value

    @rest_method
    def status(self, value: OrderStatus) -> OrderStatus:
        return value

    @rest_method
    def file(self, value: FileRef) -> FileRef:
        return value

    @rest_method
    def numbers(self, value: list[int]) -> int:
        return sum(value)

    @rest_method
    def order(self, value: Order) -> str:
        return value["number"]

    @rest_method
    def orders(self, value: list[Order]) -> int:
        return len(value)

    @rest_method
    def range(self, value: Range) -> Range:
        return value

    @rest_method
    def optional(self, caller: Caller, value: Optional[int] = None) -> str:
        return f"{caller.username}:{value}"

    @rest_method
    def customers(self, data: DataAccess) -> list[Customer]:
        return data.search(Customer, limit=2, fetch_plan="_local")

    @rest_method
    def detailed(self, data: DataAccess) -> Order:
        return data.load(Order, ORDER_0, "order-with-details")

    @rest_method(http_methods=("POST",))
    def writeThenFail(self, data: DataAccess) -> None:
        data.save(Customer, {"name": "written then rolled back"})
        raise RuntimeError("secret internal detail")

    @rest_method(http_methods=("POST",))
    def writeThenConflict(self, data: DataAccess) -> None:
        data.save(Customer, {"name": "written then rolled back"})
        raise Conflict("Out of stock", "Product SP-100 is out of stock")


@rest_service(name="renamed")
class NamedService:
    @rest_method
    def ping(self) -> str:
        return "pong"


class PlainService:
    @rest_method
    def ping(self) -> str:
        return "pong"


APPLICATION = dataclasses.replace(
    demo, services=tuple(demo.services) + (TypesService(), NamedService, rest_service(PlainService)))


@pytest.fixture
def typed(make_app):
    c = Client(make_app(application=APPLICATION))
    return c, {"Authorization": f"Bearer {get_token(c)}"}


CASES = [  # method, value by GET (text), value by POST (JSON), expected text, bad value
    ("text", "x y", "x y", "x y", "\x00"),
    ("whole", "-12", -12, "-12", "1.5"),
    ("double", "2.5", 2.5, "2.5", "x"),
    ("amount", "10.50", "10.50", "10.50", "1e999"),
    ("flag", "true", True, "true", "yes"),
    ("ident", ORDER_0, ORDER_0, ORDER_0, "x"),
    ("day", "2024-02-29", "2024-02-29", "2024-02-29", "2023-02-29"),
    ("moment", "2024-02-29T10:11:12", "2024-02-29T10:11:12", "2024-02-29T10:11:12", "10:11"),
    ("clock", "10:11:12", "10:11:12", "10:11:12", "25:00:00"),
    ("status", "PAID", "PAID", "PAID", "LOST"),
    ("file", REF, REF, REF, "not a reference"),
]


@pytest.mark.parametrize("method, text, json_value, expected, bad", CASES)
def test_simple_parameters_by_get_and_post_and_their_bad_values(typed, method, text, json_value,
                                                                expected, bad):
    client, auth = typed
    by_get = client.get(f"/rest/services/typesService/{method}", query_string={"value": text},
                        headers=auth)
    by_post = client.post(f"/rest/services/typesService/{method}", json={"value": json_value},
                          headers=auth)
    for response in (by_get, by_post):
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.content_type == "text/plain;charset=UTF-8"
        assert response.get_data(as_text=True) == expected
    for response in (client.get(f"/rest/services/typesService/{method}", query_string={"value": bad},
                                headers=auth),
                     client.post(f"/rest/services/typesService/{method}", json={"value": bad},
                                 headers=auth)):
        assert response.status_code == 400
        assert response.json == {"error": "Invalid parameter value",
                                 "details": "Invalid parameter value for value"}


def test_a_list_of_simple_values_as_json_repeated_or_a_json_array(typed):
    client, auth = typed
    url = "/rest/services/typesService/numbers"
    assert client.get(url, query_string=[("value", "1"), ("value", "2")], headers=auth).get_data() == b"3"
    assert client.get(url, query_string={"value": "[1, 2, 3]"}, headers=auth).get_data() == b"6"
    assert client.post(url, json={"value": [4, 5]}, headers=auth).get_data() == b"9"
    assert client.post(url, json={"value": [4, "x"]}, headers=auth).status_code == 400
    assert client.post(url, json={"value": 4}, headers=auth).status_code == 400


def test_entity_and_entity_list_parameters(typed):
    client, auth = typed
    order = {"number": "E-1", "date": "2025-01-01", "customer": {"id": demo_id("customer", 1)}}
    assert client.post("/rest/services/typesService/order", json={"value": order},
                       headers=auth).get_data() == b"E-1"
    assert client.get("/rest/services/typesService/order", query_string={"value": '{"number": "E-2", '
                      '"date": "2025-01-01", "customer": {"id": "%s"}}' % demo_id("customer", 1)},
                      headers=auth).get_data() == b"E-2"
    assert client.post("/rest/services/typesService/orders", json={"value": [order, order]},
                       headers=auth).get_data() == b"2"
    bad = client.post("/rest/services/typesService/orders", json={"value": [order, {"number": "x"}]},
                      headers=auth)
    assert bad.status_code == 400 and {v["path"] for v in bad.json} == {"value[1].date", "value[1].customer"}


def test_a_dataclass_parameter_and_result(typed):
    client, auth = typed
    response = client.post("/rest/services/typesService/range", headers=auth,
                           json={"value": {"low": 1, "days": ["2024-01-02"]}})
    assert response.status_code == 200 and response.json == {"low": 1, "days": ["2024-01-02"]}
    by_get = client.get("/rest/services/typesService/range", query_string={"value": '{"low": 2}'},
                        headers=auth)
    assert by_get.json == {"low": 2}
    bad = client.post("/rest/services/typesService/range", json={"value": {"high": "x"}}, headers=auth)
    assert bad.status_code == 400
    assert sorted((v["path"], v["message"]) for v in bad.json) == [
        ("value.high", "Invalid long value: expected a number"), ("value.low", "must not be null")]


def test_optional_parameters_may_be_absent_and_the_caller_is_injected(typed):
    client, auth = typed
    assert client.get("/rest/services/typesService/optional", headers=auth).get_data() == b"demo-client:None"
    assert client.get("/rest/services/typesService/optional?value=3",
                      headers=auth).get_data() == b"demo-client:3"
    described = client.get("/rest/services/typesService", headers=auth).json
    optional = next(m for m in described["methods"] if m["name"] == "optional")
    assert optional["params"] == [{"name": "value", "type": "long", "required": False}]


def test_a_service_error_passes_through_and_nothing_it_wrote_stays(typed):
    client, auth = typed
    response = client.post("/rest/services/typesService/writeThenConflict", headers=auth)
    assert response.status_code == 409
    assert response.json == {"error": "Out of stock", "details": "Product SP-100 is out of stock"}
    assert _written(client, auth) == 0


def test_an_unexpected_error_is_a_500_with_only_the_request_id_and_nothing_it_wrote_stays(typed, caplog):
    client, auth = typed
    response = client.post("/rest/services/typesService/writeThenFail", headers=auth)
    assert response.status_code == 500 and response.json == {
        "error": "Server error", "details": f"Request id {response.headers['X-Request-Id']}"}
    assert "secret internal detail" in caplog.text
    assert _written(client, auth) == 0


def _written(client, auth):
    return client.get("/rest/entities/Customer/search/count", headers=auth, query_string={
        "filter": '{"conditions": [{"property": "name", "operator": "=", '
                  '"value": "written then rolled back"}]}'}).json


def test_service_names_follow_the_class_name_unless_given(typed):
    client, auth = typed
    names = {s["name"] for s in client.get("/rest/services", headers=auth).json}
    assert {"orderService", "productPriceService", "typesService", "renamed", "plainService"} <= names
    assert client.get("/rest/services/renamed/ping", headers=auth).get_data() == b"pong"
    assert client.get("/rest/services/plainService/ping", headers=auth).get_data() == b"pong"
