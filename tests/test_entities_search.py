"""Entities API, search: the filter grammar, its operators and its error strings."""
import json

import pytest

from conftest import demo_id


def search(client, auth, entity, conditions, **params):
    query = {"filter": json.dumps({"conditions": conditions}), **params}
    return client.get(f"/rest/entities/{entity}/search", query_string=query, headers=auth)


def names(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(row.get("name") or row.get("number") for row in response.json)


def cond(prop, op, value=None, **extra):
    item = {"property": prop, "operator": op, **extra}
    if value is not None:
        item["value"] = value
    return item


@pytest.mark.parametrize("condition, expected", [
    (cond("name", "=", "Inverter"), ["Inverter"]),
    (cond("name", "<>", "Inverter"), 9),
    (cond("price", ">", 1299), ["Heat pump"]),
    (cond("price", ">=", 1299), ["Battery pack", "Heat pump"]),
    (cond("price", "<", 20), ["Cable set"]),
    (cond("price", "<=", "24.99"), ["Cable set", "Smart plug"]),
    (cond("name", "in", ["Inverter", "Wall box", "nothing"]), ["Inverter", "Wall box"]),
    (cond("name", "notIn", ["Inverter", "Wall box"]), 8),
    (cond("name", "contains", "PANEL"), ["Solar panel"]),
    (cond("name", "doesNotContain", "A"), ["Energy meter", "Inverter"]),
    (cond("name", "startsWith", "ch"), ["Charge controller"]),
    (cond("name", "endsWith", "BOX"), ["Wall box"]),
    (cond("sku", "isNull"), []),
    (cond("sku", "isNull", False), 10),
    (cond("sku", "notEmpty"), 10),
    (cond("sku", "notEmpty", "false"), []),
])
def test_operators(client, auth, condition, expected):
    found = names(search(client, auth, "Product", [condition]))
    assert (len(found) if isinstance(expected, int) else found) == expected


def test_like_wildcards_in_values_are_literal(client, auth):
    assert names(search(client, auth, "Product", [cond("name", "contains", "%")])) == []
    assert names(search(client, auth, "Product", [cond("name", "contains", "_")])) == []
    assert names(search(client, auth, "Product", [cond("sku", "endsWith", "-1")])) == \
        ["Energy meter", "Smart plug"]


def test_case_insensitive_matching_beyond_ascii(client, auth):
    created = client.post("/rest/entities/Product", json={"name": "Überlänge Kabel", "price": 1}, headers=auth)
    assert created.status_code == 201
    assert names(search(client, auth, "Product", [cond("name", "contains", "ÜBERLÄNGE")])) == ["Überlänge Kabel"]
    assert names(search(client, auth, "Product", [cond("name", "startsWith", "ÜBERL")])) == ["Überlänge Kabel"]


def test_starts_with_matches_exactly_the_prefix(client, auth):
    """startsWith is a range on an index: its ends must be neither too wide nor too narrow."""
    for name in ("Wall", "Wallz", "Walm", "Wal\U0010ffff", "Wal\U0010ffffx"):
        assert client.post("/rest/entities/Product", json={"name": name, "price": 1},
                           headers=auth).status_code == 201
    assert names(search(client, auth, "Product", [cond("name", "startsWith", "wall")])) == \
        ["Wall", "Wall box", "Wallz"]
    assert names(search(client, auth, "Product", [cond("name", "startsWith", "wal\U0010ffff")])) == \
        ["Wal\U0010ffff", "Wal\U0010ffffx"]
    assert len(names(search(client, auth, "Product", [cond("name", "startsWith", "")]))) == 15


def test_groups_and_or_nest_case_insensitively(client, auth):
    conditions = [{"group": "or", "conditions": [
        cond("name", "=", "Inverter"),
        {"group": "And", "conditions": [cond("price", ">", 500), cond("name", "startsWith", "W")]}]}]
    assert names(search(client, auth, "Product", conditions)) == ["Inverter", "Wall box"]


def test_root_conditions_are_anded_and_empty_means_all(client, auth):
    assert names(search(client, auth, "Product", [cond("price", ">", 100), cond("price", "<", 300)])) == \
        ["Charge controller", "Solar panel"]
    assert len(names(search(client, auth, "Product", []))) == 10


def test_dotted_paths_through_references(client, auth):
    found = search(client, auth, "Order", [cond("customer.name", "contains", "ali")], returnCount="true")
    assert found.headers["X-Total-Count"] == "3"
    lines = search(client, auth, "OrderLine", [cond("order.customer.grade", "=", "GOLD")])
    assert lines.status_code == 200 and lines.json


def test_entity_values_as_ids_or_objects(client, auth):
    customer = demo_id("customer", 1)
    by_id = search(client, auth, "Order", [cond("customer", "=", customer)])
    by_object = search(client, auth, "Order", [cond("customer", "in", [{"_entityName": "Customer", "id": customer}])])
    assert names(by_id) == names(by_object) == ["00002", "00022", "00042"]


def test_enum_dates_and_booleans(client, auth):
    paid = names(search(client, auth, "Order", [cond("status", "=", "PAID")]))
    assert len(paid) == 13 and "00002" in paid
    early = names(search(client, auth, "Order", [cond("date", "<", "2024-01-07")]))
    assert early == ["00001", "00002"]
    assert names(search(client, auth, "Customer", [cond("createdDate", ">=", "2024-01-20T00:00:00")])) == ["Tara Thiel"]


def test_post_search_with_body_and_paging(client, auth):
    body = {"filter": {"conditions": [cond("price", ">", 50)]}, "sort": "-price", "limit": 2,
            "offset": 1, "returnCount": True, "fetchPlan": {"entity": "Product", "properties": ["name"]}}
    response = client.post("/rest/entities/Product/search", json=body, headers=auth)
    assert response.status_code == 200
    assert [p["name"] for p in response.json] == ["Battery pack", "Inverter"]
    assert set(response.json[0]) == {"_entityName", "_instanceName", "id", "name"}
    assert response.headers["X-Total-Count"] == "7"


def test_count_endpoints_answer_a_bare_number(client, auth):
    query = {"filter": json.dumps({"conditions": [cond("status", "=", "NEW")]})}
    response = client.get("/rest/entities/Order/search/count", query_string=query, headers=auth)
    assert response.get_data(as_text=True) == "13"
    response = client.post("/rest/entities/Order/search/count",
                           json={"filter": {"conditions": [cond("status", "=", "NEW")]}}, headers=auth)
    assert response.json == 13


def parse_error(client, auth, conditions, entity="Product"):
    response = search(client, auth, entity, conditions)
    assert response.status_code == 400, response.get_data(as_text=True)
    return response.json


@pytest.mark.parametrize("conditions, details", [
    ([{"operator": "=", "value": 1}], "Field 'property' is not defined for filter condition"),
    ([{"property": "name", "value": 1}], "Field 'operator' is not defined for filter condition"),
    ([cond("name", "like", "x")], "Operator is not supported: like"),
    ([cond("name", "=")], "Field 'value' is not defined for filter condition"),
    ([cond("colour", "=", "red")], "Property for Product not found: colour"),
    ([cond("name.length", "=", 1)], "Property for Product not found: name.length"),
    ([cond("name", ">", "a")], "Operator > is not available for type string"),
    ([cond("price", "contains", "1")], "Operator contains is not available for type decimal"),
    ([cond("name", "in", "Inverter")], "JSON array was expected as a value for condition with operator in"),
    ([cond("price", "=", "cheap")], "Cannot parse property value: cheap"),
    ([{"group": "XOR", "conditions": []}], "Invalid conditions group type: XOR"),
    # A group names its conditions (also when there are none): not a filter that matches all.
    ([{"group": "AND"}], "Field 'conditions' is not defined for conditions group"),
])
def test_filter_errors(client, auth, conditions, details):
    assert parse_error(client, auth, conditions) == {"error": "Cannot parse entities filter", "details": details}


def test_enum_and_to_many_errors(client, auth):
    assert parse_error(client, auth, [cond("status", "=", "LOST")], "Order")["details"] \
        == "Cannot parse enum value: LOST"
    # A collection is crossed by a path (test_filters_collections.py), never compared.
    assert parse_error(client, auth, [cond("lines", "=", 1)], "Order")["details"] == \
        "Property for Order not found: lines"


def test_a_condition_that_is_not_an_object_is_malformed(client, auth):
    response = client.get("/rest/entities/Product/search", query_string={"filter": '{"conditions":[null]}'},
                          headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Malformed request JSON data structure",
                             "details": "JSON array element null is not a valid JSON object literal"}


def test_missing_filter_is_400(client, auth):
    response = client.get("/rest/entities/Product/search", headers=auth)
    assert response.json == {"error": "Cannot parse entities filter", "details": "Entities filter cannot be null"}
    response = client.post("/rest/entities/Product/search", json={"limit": 1}, headers=auth)
    assert response.status_code == 400 and response.json["details"] == "Entities filter cannot be null"


@pytest.mark.parametrize("text", [
    '{"conditions":[', "not json", '"just a string"',
])
def test_malformed_filter_json_is_400(client, auth, text):
    response = client.get("/rest/entities/Product/search", query_string={"filter": text}, headers=auth)
    assert response.status_code == 400


@pytest.mark.parametrize("value", [
    "'; DROP TABLE product; --", 'x" OR "1"="1', "%%%", "\\", "a" * 9000, "🙂",
])
def test_hostile_values_are_just_values(client, auth, value):
    assert names(search(client, auth, "Product", [cond("name", "contains", value)])) == []
    assert len(names(search(client, auth, "Product", []))) == 10


def test_nul_characters_are_refused(client, auth):
    assert parse_error(client, auth, [cond("name", "contains", "a\x00")])["details"] == \
        "Cannot parse property value: a\x00"


def test_very_long_values_deep_nesting_and_huge_lists_are_refused(client, auth):
    assert "longer than" in parse_error(client, auth, [cond("name", "=", "x" * 20000)])["details"]
    nested = cond("name", "=", "x")
    for _ in range(40):
        nested = {"group": "AND", "conditions": [nested]}
    assert "nested deeper" in parse_error(client, auth, [nested])["details"]
    assert "At most" in parse_error(client, auth, [cond("name", "in", ["x"] * 5000)])["details"]
    deep_json = "[" * 100000 + "]" * 100000
    response = client.get("/rest/entities/Product/search", query_string={"filter": deep_json}, headers=auth)
    assert response.status_code == 400


def test_a_lone_surrogate_in_a_filter_is_a_clean_400(client, auth):
    response = client.get("/rest/entities/Product/search",
                          query_string={"filter": '{"conditions":[{"property":"name",'
                                                  '"operator":"=","value":"\\ud800"}]}'},
                          headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "Cannot parse entities filter"


def test_searches_of_one_shape_answer_each_for_its_own_values(client, auth):
    """The SQL of a filter shape is reused: the values must still be this request's."""
    for prefix, expected in (("in", ["Inverter"]), ("wa", ["Wall box"]), ("s", ["Smart plug", "Solar panel"])):
        assert names(search(client, auth, "Product", [cond("name", "startsWith", prefix)])) == expected
    for values, expected in ((["Inverter"], ["Inverter"]), (["Wall box", "Heat pump"], ["Heat pump", "Wall box"])):
        assert names(search(client, auth, "Product", [cond("name", "in", values)])) == expected
    assert names(search(client, auth, "Product", [cond("price", ">", 1299)])) == ["Heat pump"]
    assert len(names(search(client, auth, "Product", [cond("price", ">", 100)]))) == 6


def test_a_filter_text_sent_again_is_parsed_for_each_caller(client, auth, alice_auth):
    """A URL filter's tree is kept per caller: the same text answers each
    caller with its own session values and its own attribute permissions,
    whoever sent it first."""
    first, second = (client.get("/rest/userInfo", headers=h).json["username"] for h in (auth, alice_auth))
    for name in (first, second):
        assert client.post("/rest/entities/Customer", json={"name": name}, headers=auth).status_code == 201
    own = [cond("name", "=", ":session$username")]
    by_email = [cond("email", "isNull", False), cond("name", "in", [first, second])]
    for _ in range(2):
        assert names(search(client, auth, "Customer", own)) == [first]
        assert names(search(client, alice_auth, "Customer", own)) == [second]
        assert search(client, alice_auth, "Customer", by_email).status_code == 400
        assert names(search(client, auth, "Customer", by_email)) == []
        count = client.get("/rest/entities/Customer/search/count", headers=alice_auth,
                           query_string={"filter": json.dumps({"conditions": own})})
        assert count.get_data(as_text=True) == "1"


@pytest.mark.parametrize("filter_spec", [
    {"conditions": None},
    {"conditions": [{"group": "AND", "conditions": None}]},
])
def test_conditions_that_are_null_are_malformed(client, auth, filter_spec):
    response = client.post("/rest/entities/Product/search/count", json={"filter": filter_spec},
                           headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Malformed request JSON data structure",
                             "details": "Field 'conditions' must be a JSON array"}


def test_null_parts_of_a_search_body_are_left_out(client, auth):
    body = {"filter": {"conditions": []}, "fetchPlan": None, "sort": None, "limit": None,
            "offset": None, "after": None, "returnNulls": None, "returnCount": None}
    response = client.post("/rest/entities/Product/search", json=body, headers=auth)
    assert response.status_code == 200 and "X-Total-Count" not in response.headers


def test_count_without_a_filter_counts_every_entity_the_caller_sees(client, auth, reader_auth):
    """GET without ``filter``, POST without a body or with ``{}``: all rows the
    caller may read (row rules apply: the reader does not see internal tags)."""
    totals = []
    for headers in (auth, reader_auth):
        listed = client.get("/rest/entities/Tag", query_string={"returnCount": "true", "limit": 1},
                            headers=headers)
        total = int(listed.headers["X-Total-Count"])
        totals.append(total)
        answers = [client.get("/rest/entities/Tag/search/count", headers=headers),
                   client.post("/rest/entities/Tag/search/count", headers=headers),
                   client.post("/rest/entities/Tag/search/count", data=" ", headers=headers),
                   client.post("/rest/entities/Tag/search/count", json={}, headers=headers)]
        assert [(a.status_code, a.json) for a in answers] == [(200, total)] * 4
    assert 0 < totals[1] < totals[0]


def test_count_body_that_is_not_an_object_is_still_malformed(client, auth):
    for data in ("[]", "not json", "null"):
        response = client.post("/rest/entities/Tag/search/count", data=data, headers=auth)
        assert response.status_code == 400, data
        assert response.json["error"] == "Malformed request JSON data structure"


def test_a_long_url_filter_asked_again_or_changed_answers_as_its_own_text_says(client, auth):
    # Long encoded query values are decoded once and kept: the same text
    # answers the same, a different text of the same length its own rows,
    # and a value that is not UTF-8 is read as the parser reads it each time.
    inverter = [cond("name", "=", "Inverter"), cond("name", "<>", "Xnverter")]
    wall_box = [cond("name", "=", "Wall box"), cond("name", "<>", "Xall box")]
    assert len(json.dumps(inverter)) == len(json.dumps(wall_box))
    for _ in range(2):
        assert names(search(client, auth, "Product", inverter)) == ["Inverter"]
        assert names(search(client, auth, "Product", wall_box)) == ["Wall box"]
    plus = "/rest/entities/Product/search?filter=" + (
        '{"conditions":[{"property":"name","operator":"=","value":"Wall+box"}]}'
        .replace('"', "%22"))
    for _ in range(2):
        assert names(client.get(plus, headers=auth)) == ["Wall box"]
    invalid = plus.replace("Wall", "W%FFall")
    answers = [client.get(invalid, headers=auth) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json == answers[1].json == []
