"""Services API permissions: per-method grants, hidden attributes and row-level
rules in results; the services file checked at startup."""
import dataclasses

import pytest
from werkzeug.test import Client

from conftest import demo_id, get_token, make_settings
from restsvc import ResourceRole, RowLevelRole
from restsvc.app import RestApp
from restsvc.demo import application as demo
from restsvc.settings import SettingsError
from test_services_types import APPLICATION

ORDER_0 = demo_id("order", 0)


def test_a_reader_may_call_the_read_only_methods_only(client, reader_auth):
    assert client.get("/rest/services/orderService/calculateTotal", query_string={"orderId": ORDER_0},
                      headers=reader_auth).status_code == 200
    response = client.post("/rest/services/orderService/recalculate", json={"orderId": ORDER_0},
                           headers=reader_auth)
    assert response.status_code == 403
    assert response.json == {"error": "Forbidden",
                             "details": "The caller may not call orderService.recalculate"}


def test_the_permission_is_checked_before_any_parameter(client, reader_auth):
    response = client.post("/rest/services/orderService/createOrder", data="not json",
                           headers=reader_auth)
    assert response.status_code == 403


def test_the_list_shows_only_what_the_caller_may_call(client, reader_auth):
    described = {s["name"]: {m["name"] for m in s["methods"]}
                 for s in client.get("/rest/services", headers=reader_auth).json}
    assert described == {"orderService": {"calculateTotal", "ordersBetween", "summarize"},
                         "productPriceService": {"price"}}


def test_rest_minimal_alone_may_call_nothing(client_with_roles):
    client, auth = client_with_roles()
    assert client.get("/rest/services", headers=auth).json == []
    assert client.get("/rest/services/orderService/calculateTotal", query_string={"orderId": ORDER_0},
                      headers=auth).status_code == 403


def test_a_pattern_grants_every_method_of_a_service(make_app):
    role = ResourceRole("price-all", entities={"Product": "read,update"},
                        attributes={"Product": {"*": "modify"}}, services=("productPriceService.*",))
    app = make_app({"svc.authserver.client.t.client-id": "t",
                    "svc.authserver.client.t.client-secret": "{noop}t-secret",
                    "svc.authserver.client.t.resource-roles": "rest-minimal,price-all"},
                   application=dataclasses.replace(demo, resource_roles=demo.resource_roles + (role,)))
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client, 't', 't-secret')}"}
    response = client.post("/rest/services/productPriceService/setPrice", headers=auth,
                           json={"productId": demo_id("product", 0), "price": 1})
    assert response.status_code == 200
    assert client.get("/rest/services/orderService/calculateTotal", query_string={"orderId": ORDER_0},
                      headers=auth).status_code == 403


HIDES_EMAIL = ResourceRole("no-email", entities={"Customer": "read", "Order": "read",
                                                 "OrderLine": "read", "Product": "read"},
                           attributes={"Customer": {"name": "view"}, "Order": {"*": "view"},
                                       "OrderLine": {"*": "view"}, "Product": {"*": "view"}},
                           services=("*",))


@pytest.fixture
def no_email(make_app):

    def build(row_level=()):
        application = dataclasses.replace(
            APPLICATION, resource_roles=APPLICATION.resource_roles + (HIDES_EMAIL,),
            row_level_roles=APPLICATION.row_level_roles + tuple(row_level))
        app = make_app({"svc.authserver.client.t.client-id": "t",
                        "svc.authserver.client.t.client-secret": "{noop}t-secret",
                        "svc.authserver.client.t.resource-roles": "rest-minimal,no-email",
                        "svc.authserver.client.t.row-level-roles": ",".join(r.code for r in row_level)},
                       application=application)
        client = Client(app)
        return client, {"Authorization": f"Bearer {get_token(client, 't', 't-secret')}"}
    return build


def test_hidden_attributes_are_absent_from_entity_results_also_nested(no_email):
    client, auth = no_email()
    customers = client.get("/rest/services/typesService/customers", headers=auth).json
    assert len(customers) == 2 and all("email" not in c and c["name"] for c in customers)
    order = client.get("/rest/services/typesService/detailed", headers=auth).json
    assert order["customer"]["name"] and "email" not in order["customer"]


def test_row_level_rules_apply_to_what_services_load(no_email):
    own = RowLevelRole("own-none", filters={"Order": {"conditions": [
        {"property": "number", "operator": "=", "value": "00001"}]}})
    client, auth = no_email((own,))
    rows = client.get("/rest/services/orderService/ordersBetween", headers=auth,
                      query_string={"fromDate": "2024-01-01", "toDate": "2024-12-31"}).json
    assert [row["number"] for row in rows] == ["00001"]
    hidden = client.get("/rest/services/orderService/calculateTotal", headers=auth,
                        query_string={"orderId": demo_id("order", 1)})
    assert hidden.status_code == 404


def write(tmp_path, body):
    path = tmp_path / "services.xml"
    path.write_text('<?xml version="1.0"?>\n<services>\n' + body + "\n</services>\n")
    return str(path)


@pytest.mark.parametrize("body, message", [
    ('<service name="nope"/>', 'line 3, <service name="nope">: no service object named nope'),
    ('<service name="productPriceService">\n<method name="nope"/></service>',
     'line 4, <method name="nope">: service productPriceService has no method nope'),
    ('<service name="productPriceService">\n<method name="price">\n<param name="productId"/>'
     '<param name="x"/></method></service>', 'line 5, <param name="x">: price has no request parameter x'),
    ('<service name="productPriceService">\n<method name="price">\n<param name="productId" '
     'type="localDate"/></method></service>', "type localDate does not match"),
    ('<service name="productPriceService">\n<method name="price"></method></service>',
     "parameter productId of price is required but not listed"),
    ('<service name="productPriceService">\n<method name="price" httpMethod="PUT">'
     '<param name="productId"/></method></service>', "httpMethod must be GET or POST"),
    ('<service name="productPriceService"><oops/></service>', "unexpected element"),
])
def test_the_services_file_is_checked_at_startup(database_url, tmp_path, body, message):
    settings = make_settings(database_url, tmp_path, {"svc.rest.services-config": write(tmp_path, body)})
    with pytest.raises(SettingsError) as raised:
        RestApp(settings)
    assert str(raised.value).startswith("svc.rest.services-config: ")
    assert "services.xml" in str(raised.value) and message in str(raised.value)


def test_a_services_file_with_a_dtd_is_refused(database_url, tmp_path):
    path = tmp_path / "services.xml"
    path.write_text('<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x "y">]><services/>')
    settings = make_settings(database_url, tmp_path, {"svc.rest.services-config": str(path)})
    with pytest.raises(SettingsError, match="DTDs and entity declarations are not allowed"):
        RestApp(settings)


def test_xml_wins_over_code_for_the_same_method(make_app, tmp_path):
    path = write(tmp_path, '<service name="orderService"><method name="calculateTotal" httpMethod="POST">'
                           '<param name="orderId"/></method></service>')
    client = Client(make_app({"svc.rest.services-config": path}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    assert client.get("/rest/services/orderService/calculateTotal", query_string={"orderId": ORDER_0},
                      headers=auth).status_code == 405
    assert client.get("/rest/services/productPriceService/price", headers=auth).json == {
        "error": "Service method not found", "details": "productPriceService.price"}


def test_a_role_granting_an_unknown_service_method_stops_startup(make_app):
    typo = ResourceRole("typo", services=("orderService.calculateTotals",))
    with pytest.raises(SettingsError, match="role typo grants 'orderService.calculateTotals'"):
        make_app(application=dataclasses.replace(demo, resource_roles=demo.resource_roles + (typo,)))
