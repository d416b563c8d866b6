"""Every number from input is bounded before it is converted (issue 9, point 1
and the offset/limit part of point 5): huge exponents and long digit strings
are a quick 400 on every path, and numbers outside a column's range are a 400
on SQLite and PostgreSQL alike, never a 500."""
import time

import pytest

from restsvc.settings import SettingsError, build_settings

BOUNDS = "at most 100 digits"


def search(client, auth, prop, literal):
    body = '{"filter": {"conditions": [{"property": "%s", "operator": ">", "value": %s}]}}' % (
        prop, literal)
    started = time.process_time()
    response = client.post("/rest/entities/Order/search", data=body, headers=auth,
                           content_type="application/json")
    return response, time.process_time() - started


@pytest.mark.parametrize("prop", ["version", "amount"])
def test_a_huge_exponent_in_a_search_body_is_refused_before_any_conversion(client, auth, prop):
    response, cpu_seconds = search(client, auth, prop, "1E+600000")
    assert response.status_code == 400
    assert BOUNDS in response.json["details"]
    assert cpu_seconds < 1      # was 10.9 s for version (int of a 600,000-digit number)


def test_a_number_literal_with_too_many_digits_is_refused(client, auth):
    response, _ = search(client, auth, "amount", "9" * 200)
    assert response.status_code == 400 and BOUNDS in response.json["details"]


@pytest.mark.parametrize("literal", ["1E+131072", "1E-20000", "1E+300", "100000000000000"])
def test_a_filter_value_outside_the_column_range_is_a_400(client, auth, literal):
    """amount is numeric(14,2): 12 whole digits. PostgreSQL answered 500
    (numeric overflow) for the first two; SQLite answered 200."""
    response, _ = search(client, auth, "amount", literal)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.json["error"] in ("Cannot parse entities filter",      # out of the column's range
                                      "Malformed request JSON data structure")   # out of all bounds


def test_a_filter_value_within_the_column_range_still_works(client, auth):
    response, _ = search(client, auth, "amount", "999999999999.99")
    assert response.status_code == 200 and response.json == []


def test_a_filter_in_the_url_with_a_huge_number_is_a_400(client, auth):
    response = client.get("/rest/entities/Order/search", headers=auth, query_string={
        "filter": '{"conditions": [{"property": "version", "operator": "=", "value": 1e999999}]}'})
    assert response.status_code == 400 and BOUNDS in response.json["details"]


def test_a_predefined_query_parameter_with_a_huge_exponent_is_refused_quickly(client, auth):
    started = time.process_time()
    response = client.post("/rest/queries/Order/ordersOfMonth", data='{"year": 1E+300000, "month": 1}',
                           headers=auth, content_type="application/json")
    assert response.status_code == 400 and BOUNDS in response.json["details"]
    assert time.process_time() - started < 1      # was 2.8 s


@pytest.mark.parametrize("year", ["1E+300000", "9" * 5000, "1_000", "٢٠٢٤", "NaN"])
def test_a_query_string_parameter_that_is_no_bounded_number_is_invalid(client, auth, year):
    response = client.get("/rest/queries/Order/ordersOfMonth", headers=auth,
                          query_string={"year": year, "month": "1"})
    assert response.status_code == 400
    assert response.json == {"error": "Invalid parameter value",
                             "details": "Invalid parameter value for year"}


@pytest.mark.parametrize("path", ["/rest/entities/Order", "/rest/queries/Order/ordersByStatus?status=NEW"])
@pytest.mark.parametrize("name", ["offset", "limit"])
def test_offset_and_limit_beyond_64_bits_are_a_400(client, auth, path, name):
    separator = "&" if "?" in path else "?"
    response = client.get(f"{path}{separator}{name}=99999999999999999999", headers=auth)
    assert response.status_code == 400, response.get_data(as_text=True)   # was 500 (OverflowError)
    assert response.json["error"] in ("Invalid parameter value", "The value of limit exceeded")


def test_the_largest_64_bit_offset_is_accepted(client, auth):
    response = client.get("/rest/entities/Order?offset=9223372036854775807", headers=auth)
    assert response.status_code == 200 and response.json == []


def test_offset_beyond_64_bits_in_a_search_body_is_a_400(client, auth):
    response = client.post("/rest/entities/Order/search", headers=auth, json={
        "filter": {"conditions": []}, "offset": 2 ** 70})
    assert response.status_code == 400 and response.json["error"] == "Invalid parameter value"


def test_a_setting_with_too_many_digits_fails_naming_the_key():
    with pytest.raises(SettingsError, match="svc.rest.default-max-fetch-size"):
        build_settings({"svc.secret-key": "a-test-secret-key-0123",
                        "svc.rest.default-max-fetch-size": "9" * 5000}, environ={})


def _first(client, auth, entity, plan="_local"):
    return client.get(f"/rest/entities/{entity}?limit=1&fetchPlan={plan}", headers=auth).json[0]


@pytest.mark.parametrize("entity", ["User", "Order"])
@pytest.mark.parametrize("version", ["-5531880346019442982912", "9223372036854775808"])
def test_a_version_out_of_range_is_a_validation_error_on_every_entity(client, auth, entity, version):
    """Was 500 (OverflowError) on SQLite and reached the UPDATE on PostgreSQL."""
    row = _first(client, auth, entity)
    response = client.put(f"/rest/entities/{entity}/{row['id']}", data='{"version": %s}' % version,
                          headers=auth, content_type="application/json")
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.json == [{"message": "Invalid int value: number out of range",
                              "messageTemplate": "{restsvc.validation.InvalidValue}",
                              "path": "version", "invalidValue": int(version)}]


def test_a_version_out_of_range_in_a_bulk_update_or_a_composition_child_is_a_validation_error(
        client, auth):
    order = _first(client, auth, "Order", "order-with-details")
    line = order["lines"][0]["id"]
    for body, path in (([{"id": order["id"], "version": 10 ** 30}], "entities[0].version"),
                       ({"lines": [{"id": line, "version": -10 ** 30}]}, "lines[0].version")):
        url = "/rest/entities/Order" + ("" if isinstance(body, list) else f"/{order['id']}")
        response = client.put(url, json=body, headers=auth)
        assert response.status_code == 400, response.get_data(as_text=True)
        assert [v["path"] for v in response.json] == [path]


def test_a_version_in_range_still_checks_the_optimistic_lock(client, auth):
    order = _first(client, auth, "Order")
    response = client.put(f"/rest/entities/Order/{order['id']}", json={"version": 2 ** 31 - 1},
                          headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Optimistic lock"
