"""GET|POST /rest/entities/<entity>/aggregate: groups, aggregates, having, sort, permissions."""
import json
from collections import Counter, defaultdict
from decimal import Decimal

import pytest

from restsvc import ResourceRole, RowLevelRole

ORDERS = "/rest/entities/Order"
READER = ResourceRole(
    "t-reader", entities={"Customer": "read", "Order": "read"},
    attributes={"Customer": {"name": "view", "grade": "view"}, "Order": {"*": "view"}})
GOLD_ONLY = RowLevelRole("t-gold", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}})


def _exact(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    return json.loads(response.get_data(), parse_float=Decimal)


def _orders(client, auth):
    return _exact(client.get(f"{ORDERS}?limit=1000&fetchPlan=_local", headers=auth))


def test_sums_and_counts_per_group_equal_those_of_a_plain_list(client, auth):
    expected_count, expected_sum = Counter(), defaultdict(Decimal)
    for order in _orders(client, auth):
        expected_count[order["status"]] += 1
        expected_sum[order["status"]] += order["amount"]
    groups = _exact(client.post(f"{ORDERS}/aggregate", headers=auth, json={
        "groupBy": ["status"], "count": True, "sum": ["amount"], "avg": ["amount"]}))
    assert {g["group"]["status"]: g["count"] for g in groups} == expected_count
    assert {g["group"]["status"]: g["sum"]["amount"] for g in groups} == expected_sum
    for group in groups:
        average = expected_sum[group["group"]["status"]] / expected_count[group["group"]["status"]]
        assert abs(group["avg"]["amount"] - average) < Decimal("0.01")


def test_group_by_month_and_to_one_path_with_min_and_max(client, auth):
    orders = _orders(client, auth)
    groups = _exact(client.get(f"{ORDERS}/aggregate?groupBy=month(date)&count=true"
                               "&min=date&max=date&sort=month(date)", headers=auth))
    months = Counter(order["date"][:7] for order in orders)
    assert [(g["group"]["month(date)"], g["count"]) for g in groups] == sorted(months.items())
    first = groups[0]
    in_first = sorted(o["date"] for o in orders if o["date"].startswith(first["group"]["month(date)"]))
    assert first["min"]["date"] == in_first[0] and first["max"]["date"] == in_first[-1]
    years = _exact(client.get(f"{ORDERS}/aggregate?groupBy=year(date)&count=true", headers=auth))
    assert years == [{"group": {"year(date)": 2024}, "count": 50}]
    by_grade = _exact(client.post(f"{ORDERS}/aggregate", headers=auth, json={
        "groupBy": ["customer.grade"], "count": True, "countDistinct": ["customer"]}))
    assert sum(g["count"] for g in by_grade) == len(orders)
    assert sum(g["countDistinct"]["customer"] for g in by_grade) == 20


def test_having_sort_and_limit_apply_to_the_groups(client, auth):
    everything = _exact(client.post(f"{ORDERS}/aggregate", headers=auth, json={
        "groupBy": ["customer"], "count": True, "sum": ["amount"]}))
    threshold = sorted(g["sum"]["amount"] for g in everything)[10]
    body = json.dumps({
        "groupBy": ["customer"], "count": True, "sum": ["amount"],
        "having": {"conditions": [{"property": "sum.amount", "operator": ">=", "value": threshold}]},
        "sort": "-sum.amount", "limit": 3}, default=float)     # the number as written
    groups = _exact(client.post(f"{ORDERS}/aggregate", headers=auth, data=body,
                                content_type="application/json"))
    expected = sorted((g for g in everything if g["sum"]["amount"] >= threshold),
                      key=lambda g: -g["sum"]["amount"])[:3]
    assert [g["sum"]["amount"] for g in groups] == [g["sum"]["amount"] for g in expected]
    assert len(groups) == 3


def test_row_level_rules_apply_before_aggregating(client_with_roles):
    full = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
    client, auth = client_with_roles(full, row_level=[GOLD_ONLY])
    groups = _exact(client.get("/rest/entities/Customer/aggregate?groupBy=grade&count=true",
                               headers=auth))
    visible = client.get("/rest/entities/Customer?limit=1000", headers=auth).json
    assert groups == [{"group": {"grade": "GOLD"}, "count": len(visible)}]


@pytest.mark.parametrize("spec", [
    {"groupBy": ["email"], "count": True},
    {"sum": ["email"]},
    {"count": True, "filter": {"conditions": [{"property": "email", "operator": "=", "value": "x"}]}},
    {"countDistinct": ["birthDate"]},
])
def test_hidden_attributes_cannot_be_grouped_aggregated_or_filtered(client_with_roles, spec):
    client, auth = client_with_roles(READER)
    response = client.post("/rest/entities/Customer/aggregate", json=spec, headers=auth)
    assert response.status_code == 400
    assert response.json["error"] in ("Invalid aggregate request", "Cannot parse entities filter")


@pytest.mark.parametrize("spec, words", [
    ({"groupBy": ["status"]}, "at least one"),
    ({"sum": ["name"]}, "not available"),
    ({"groupBy": ["month(name)"], "count": True}, "not a date"),
    ({"groupBy": ["week(date)"], "count": True}, "Unknown date part"),
    ({"count": True, "sort": "-sum.amount"}, "not asked for"),
    ({"count": True, "having": {"conditions": [{"property": "count", "operator": "~", "value": 1}]}},
     "operator"),
    ({"count": True, "limit": -1}, "limit"),
    ({"count": True, "having": {"conditions": [{"property": ["count"], "operator": "=", "value": 1}]}},
     "not asked for"),
    ({"groupBy": ["lines.quantity"], "count": True}, "collection"),
])
def test_bad_aggregate_requests_are_400(client, auth, spec, words):
    entity = "Customer" if "name" in json.dumps(spec) else "Order"
    response = client.post(f"/rest/entities/{entity}/aggregate", json=spec, headers=auth)
    assert response.status_code == 400
    assert words in response.json["details"]


def test_the_aggregate_endpoint_is_in_the_openapi_documents(client, auth):
    detailed = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    assert {"get", "post"} <= set(detailed["paths"]["/rest/entities/Order/aggregate"])
    generic = client.get("/rest/docs/openapi.json", headers=auth).json
    assert any(path.endswith("/aggregate") for path in generic["paths"])


@pytest.mark.parametrize("count", [{"x": 1}, "true", 1])
def test_count_must_be_true_or_false(client, auth, count):
    response = client.post("/rest/entities/Order/aggregate", json={"count": count}, headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Invalid aggregate request",
                             "details": "count must be true or false"}


def test_min_and_max_of_a_date_time_are_written_as_the_entity_writes_it(client, auth):
    """A dateTime aggregate is the attribute's own form: to the millisecond."""
    import datetime

    from restsvc.demo.model import Customer
    moment = datetime.datetime(2030, 1, 2, 3, 4, 5, 907980)
    customer = client.post("/rest/entities/Customer", headers=auth, json={"name": "Late"}).json["id"]
    Customer.update(createdDate=moment).where(Customer.id == customer).execute()
    [answer] = _exact(client.get("/rest/entities/Customer/aggregate?max=createdDate", headers=auth))
    written = client.get(f"/rest/entities/Customer/{customer}", headers=auth).json["createdDate"]
    assert answer["max"]["createdDate"] == written == "2030-01-02T03:04:05.907"
