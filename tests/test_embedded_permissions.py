"""Attribute permissions on an embedded value's own attributes (``Customer``:
``address.city``): read, write, filter, sort, aggregates, metadata and OpenAPI
follow them as they follow any attribute's."""
import pytest

from conftest import demo_id
from restsvc import ResourceRole
from restsvc.values import SettingsError

ALICE = demo_id("customer", 0)          # Adlerweg 1, 10115 Berlin, DE

# Only the city of the address, and it may change it.
CITY_ONLY = ResourceRole("t-city", entities={"Customer": "*"},
                         attributes={"Customer": {"name": "modify", "address.city": "modify"}})
# Everything of the address but the street; the postcode and country only to view.
NO_STREET = ResourceRole("t-no-street", entities={"Customer": "*", "Country": "read"},
                         attributes={"Customer": {"name": "modify", "address.city": "modify",
                                                  "address.postcode": "view",
                                                  "address.country": "view"},
                                     "Country": {"*": "view"}})
FULL_PLAN = ('{"extends":"_base","properties":[{"name":"address","fetchPlan":'
             '{"extends":"_base","properties":[{"name":"country","fetchPlan":"_instance_name"}]}}]}')


def address(client, auth, customer_id, plan="_base", **query):
    answer = client.get(f"/rest/entities/Customer/{customer_id}", headers=auth,
                        query_string={"fetchPlan": plan, **query})
    assert answer.status_code == 200, answer.text
    return answer.json.get("address")


def search(client, auth, conditions, **extra):
    return client.post("/rest/entities/Customer/search", headers=auth, json={
        "filter": {"conditions": conditions}, "returnCount": True, **extra})


def test_an_answer_shows_only_the_granted_attributes(client_with_roles, client, auth):
    city, city_auth = client_with_roles(CITY_ONLY)
    assert address(client, auth, ALICE) == {"street": "Adlerweg 1", "city": "Berlin",
                                           "postcode": "10115"}
    assert address(city, city_auth, ALICE) == {"city": "Berlin"}
    assert address(city, city_auth, ALICE, FULL_PLAN) == {"city": "Berlin"}
    assert address(city, city_auth, ALICE, returnNulls="true") == {"city": "Berlin"}
    listed = city.get("/rest/entities/Customer", headers=city_auth,
                      query_string={"limit": 100}).json
    assert all(set(row.get("address") or {}) <= {"city"} for row in listed)
    no_street, no_street_auth = client_with_roles(NO_STREET)
    shown = address(no_street, no_street_auth, ALICE, FULL_PLAN)
    assert set(shown) == {"city", "postcode", "country"}
    assert (shown["city"], shown["postcode"], shown["country"]["id"]) == ("Berlin", "10115", "DE")


def test_a_value_whose_shown_attributes_are_all_null_is_null(client_with_roles):
    """A street but no city: to a caller who sees only the city the address is
    null (left out without returnNulls) on flat pages, single loads and the
    general loader's answers alike, not {} that would tell a hidden attribute is set."""
    from restsvc.demo.model import Customer
    city, city_auth = client_with_roles(CITY_ONLY)
    Customer.update(address_city=None).where(Customer.id == ALICE).execute()
    for plan in ("_base", FULL_PLAN):       # flat; a reference in the value: the general way
        for nulls in ("false", "true"):
            one = city.get(f"/rest/entities/Customer/{ALICE}", headers=city_auth,
                           query_string={"fetchPlan": plan, "returnNulls": nulls})
            assert one.status_code == 200, one.text
            assert ("address" in one.json) == (nulls == "true")
            assert one.json.get("address") is None
            listed = city.get("/rest/entities/Customer", headers=city_auth,
                              query_string={"fetchPlan": plan, "returnNulls": nulls, "limit": 100})
            assert one.json in listed.json


def test_a_write_changes_only_what_the_caller_may_modify(client_with_roles, client, auth):
    city, city_auth = client_with_roles(CITY_ONLY)
    changed = city.put(f"/rest/entities/Customer/{ALICE}", headers=city_auth,
                       json={"address": {"street": "Elsewhere 9", "city": "Potsdam",
                                         "postcode": "14467"}})
    assert changed.status_code == 200, changed.text
    assert address(client, auth, ALICE) == {"street": "Adlerweg 1", "city": "Potsdam",
                                           "postcode": "10115"}
    cleared = city.put(f"/rest/entities/Customer/{ALICE}", headers=city_auth,
                       json={"address": None})
    assert cleared.status_code == 200
    assert address(client, auth, ALICE) == {"street": "Adlerweg 1", "postcode": "10115"}
    created = city.post("/rest/entities/Customer", headers=city_auth, json={
        "name": "Neu", "address": {"street": "Ring 1", "city": "Graz"}})
    assert created.status_code == 201, created.text
    assert address(client, auth, created.json["id"]) == {"city": "Graz"}


def test_a_view_only_attribute_is_ignored_on_write(client_with_roles, client, auth):
    no_street, no_street_auth = client_with_roles(NO_STREET)
    answer = no_street.put(f"/rest/entities/Customer/{ALICE}", headers=no_street_auth,
                           json={"address": {"postcode": "99999", "country": {"id": "AT"},
                                             "city": "Munich"}})
    assert answer.status_code == 200, answer.text
    stored = address(client, auth, ALICE, FULL_PLAN)
    assert (stored["city"], stored["postcode"], stored["country"]["id"]) == ("Munich", "10115", "DE")


def test_filters_sort_and_aggregates_refuse_a_hidden_attribute(client_with_roles, client, auth):
    city, city_auth = client_with_roles(CITY_ONLY)
    allowed = search(city, city_auth, [{"property": "address.city", "operator": "=",
                                        "value": "Berlin"}], sort="address.city")
    assert allowed.status_code == 200
    everyone = search(client, auth, [{"property": "address.city", "operator": "=",
                                      "value": "Berlin"}])
    assert allowed.headers["X-Total-Count"] == everyone.headers["X-Total-Count"] != "0"
    for path in ("address.street", "address.country.name", "address.postcode"):
        hidden = search(city, city_auth, [{"property": path, "operator": "=", "value": "x"}])
        assert hidden.status_code == 400, path
        assert path in hidden.json["details"]
    # A hidden attribute in sort is skipped, as any hidden attribute is.
    by_street = city.get("/rest/entities/Customer", headers=city_auth,
                         query_string={"sort": "address.street", "limit": 100})
    by_id = city.get("/rest/entities/Customer", headers=city_auth, query_string={"limit": 100})
    assert by_street.status_code == 200 and by_street.json == by_id.json
    grouped = city.get("/rest/entities/Customer/aggregate", headers=city_auth,
                       query_string={"groupBy": "address.street", "count": "true"})
    assert grouped.status_code == 400
    assert city.get("/rest/entities/Customer/aggregate", headers=city_auth,
                    query_string={"groupBy": "address.city", "count": "true"}).status_code == 200


def test_metadata_and_openapi_list_only_the_visible_attributes(client_with_roles):
    city, city_auth = client_with_roles(CITY_ONLY)
    described = city.get("/rest/metadata/entities/Address", headers=city_auth)
    assert [p["name"] for p in described.json["properties"]] == ["city"]
    schemas = city.get("/rest/docs/openapiDetailed.json",
                       headers=city_auth).json["components"]["schemas"]
    assert set(schemas["embedded_Address"]["properties"]) == {"city"}
    assert set(schemas["embeddedInput_Address"]["properties"]) == {"city"}
    no_street, no_street_auth = client_with_roles(NO_STREET)
    described = no_street.get("/rest/metadata/entities/Address", headers=no_street_auth)
    assert [p["name"] for p in described.json["properties"]] == ["city", "postcode", "country"]
    schemas = no_street.get("/rest/docs/openapiDetailed.json",
                            headers=no_street_auth).json["components"]["schemas"]
    assert set(schemas["embedded_Address"]["properties"]) == {"city", "postcode", "country"}
    assert set(schemas["embeddedInput_Address"]["properties"]) == {"city"}


def test_a_grant_on_the_whole_value_covers_its_attributes(client_with_roles):
    whole = ResourceRole("t-whole", entities={"Customer": "read"},
                         attributes={"Customer": {"address": "view"}})
    c, whole_auth = client_with_roles(whole)
    assert address(c, whole_auth, ALICE) == {"street": "Adlerweg 1", "city": "Berlin",
                                            "postcode": "10115"}


def test_an_unknown_embedded_attribute_is_refused_at_startup(client_with_roles):
    wrong = ResourceRole("t-wrong", entities={"Customer": "read"},
                         attributes={"Customer": {"address.town": "view"}})
    with pytest.raises(SettingsError, match="address.town"):
        client_with_roles(wrong)


def test_history_shows_only_the_visible_attributes_values(client_with_roles, client, auth):
    reader = ResourceRole("t-city-history", entities={"Customer": "read", "HistoryItem": "read"},
                          attributes={"Customer": {"address.city": "view"},
                                      "HistoryItem": {"*": "view"}})
    assert client.put(f"/rest/entities/Customer/{ALICE}", headers=auth, json={
        "address": {"street": "Elsewhere 9", "city": "Potsdam"}}).status_code == 200
    city, city_auth = client_with_roles(reader)
    answer = city.get(f"/rest/entities/Customer/{ALICE}/history", headers=city_auth)
    assert answer.status_code == 200, answer.text
    changes = {change["name"]: change for change in answer.json[0]["changes"]}
    assert changes["address.city"]["newValue"] == "Potsdam"
    assert changes["address.street"] == {"name": "address.street"}
