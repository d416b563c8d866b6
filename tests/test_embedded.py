"""Embedded values: the demo's Address as Customer.address."""
import pytest

from conftest import demo_id
from restsvc import ResourceRole
from restsvc.demo.data import CITIES

ALICE = demo_id("customer", 0)          # Berlin
NO_ADDRESS = demo_id("customer", 4)     # every fifth customer has none


def customer(client, auth, customer_id, plan="_base", **query):
    return client.get(f"/rest/entities/Customer/{customer_id}", headers=auth,
                      query_string={"fetchPlan": plan, **query}).json


def search(client, auth, conditions, **extra):
    return client.post("/rest/entities/Customer/search", headers=auth, json={
        "filter": {"conditions": conditions}, "returnCount": True, **extra})


def test_an_embedded_value_is_a_plain_object_in_base(client, auth):
    assert customer(client, auth, ALICE)["address"] == {
        "street": "Adlerweg 1", "city": "Berlin", "postcode": "10115"}
    assert "address" not in customer(client, auth, ALICE, "_local")
    assert "address" not in customer(client, auth, NO_ADDRESS)
    assert customer(client, auth, NO_ADDRESS, returnNulls="true")["address"] is None


def test_a_fetch_plan_reaches_the_reference_inside(client, auth):
    plan = ('{"properties":[{"name":"address","fetchPlan":{"properties":'
            '["city",{"name":"country","fetchPlan":"_instance_name"}]}}]}')
    address = customer(client, auth, ALICE, plan)["address"]
    assert address["city"] == "Berlin"
    assert address["country"]["id"] == "DE" and address["country"]["_instanceName"] == "Germany"


def test_create_update_and_clear_an_embedded_value(client, auth):
    created = client.post("/rest/entities/Customer", headers=auth, json={
        "name": "Neu", "address": {"street": "Ring 1", "city": "Graz", "country": {"id": "AT"}}})
    assert created.status_code == 201
    new_id = created.json["id"]
    plan = ('{"extends":"_base","properties":[{"name":"address",'
            '"fetchPlan":{"extends":"_base","properties":["country"]}}]}')
    address = customer(client, auth, new_id, plan)["address"]
    assert (address["street"], address["city"], address["country"]["id"]) == ("Ring 1", "Graz", "AT")
    assert client.put(f"/rest/entities/Customer/{new_id}", headers=auth,
                      json={"address": {"city": "Linz"}}).status_code == 200
    assert customer(client, auth, new_id)["address"] == {"street": "Ring 1", "city": "Linz"}
    assert client.put(f"/rest/entities/Customer/{new_id}", headers=auth,
                      json={"address": None}).status_code == 200
    assert "address" not in customer(client, auth, new_id)


@pytest.mark.parametrize("address", ["Berlin", [], {"country": {"id": "QQ"}},
                                     {"city": "x" * 101}])
def test_a_bad_embedded_value_is_refused(client, auth, address):
    answer = client.put(f"/rest/entities/Customer/{ALICE}", headers=auth, json={"address": address})
    assert answer.status_code == 400
    assert customer(client, auth, ALICE)["address"]["city"] == "Berlin"


def test_filter_and_sort_reach_into_the_embedded_value(client, auth):
    answer = search(client, auth, [{"property": "address.city", "operator": "in",
                                    "value": ["Berlin", "Vienna"]}], sort="-address.city")
    cities = [customer(client, auth, row["id"])["address"]["city"] for row in answer.json]
    expected = sorted((city for i in range(20) if i % 5 != 4
                       for city in [CITIES[i % len(CITIES)][0]] if city in ("Berlin", "Vienna")),
                      reverse=True)
    assert cities == expected
    assert answer.headers["X-Total-Count"] == str(len(expected))
    by_country = search(client, auth, [{"property": "address.country.name", "operator": "=",
                                        "value": "Austria"}]).json
    assert {customer(client, auth, row["id"])["address"]["city"] for row in by_country} == {"Vienna"}


def test_the_embedded_value_itself_is_not_a_filter_value(client, auth):
    answer = search(client, auth, [{"property": "address", "operator": "=", "value": "Berlin"}])
    assert answer.status_code == 400


def test_a_referenced_country_cannot_be_deleted(client, auth):
    answer = client.delete("/rest/entities/Country/DE", headers=auth)
    assert answer.status_code == 409


def test_attribute_permission_on_the_embedded_value(client_with_roles, reader_auth, client):
    assert customer(client, reader_auth, ALICE)["address"]["city"] == "Berlin"    # sales-reader
    no_address = ResourceRole("no-address", entities={"Customer": "read"},
                              attributes={"Customer": {"name": "view"}})
    restricted, auth = client_with_roles(no_address)
    assert "address" not in customer(restricted, auth, ALICE)
    answer = search(restricted, auth, [{"property": "address.city", "operator": "=",
                                        "value": "Berlin"}])
    assert answer.status_code == 400


def test_metadata_describes_the_value_type_without_an_id(client, auth):
    props = {p["name"]: p for p in client.get("/rest/metadata/entities/Customer",
                                               headers=auth).json["properties"]}
    assert (props["address"]["attributeType"], props["address"]["type"]) == ("EMBEDDED", "Address")
    address = client.get("/rest/metadata/entities/Address", headers=auth).json
    assert [p["name"] for p in address["properties"]] == ["street", "city", "postcode", "country"]
    assert client.get("/rest/entities/Address", headers=auth).status_code == 404


def test_openapi_describes_the_embedded_value(client, auth):
    schemas = client.get("/rest/docs/openapiDetailed.json", headers=auth).json["components"]["schemas"]
    # One named schema per value type, written and given, shared by its entities.
    assert schemas["entity_Customer"]["properties"]["address"] == {
        "anyOf": [{"$ref": "#/components/schemas/embedded_Address"}, {"type": "null"}]}
    written = schemas["embedded_Address"]
    assert set(written["properties"]) == {"street", "city", "postcode", "country"}
    assert "_entityName" not in written["properties"] and "id" not in written["properties"]
    assert schemas["entityInput_Customer"]["properties"]["address"] == {
        "anyOf": [{"$ref": "#/components/schemas/embeddedInput_Address"}, {"type": "null"}]}
    country = schemas["embeddedInput_Address"]["properties"]["country"]
    assert schemas[country["anyOf"][0]["$ref"].rsplit("/", 1)[1]]["required"] == ["id"]
