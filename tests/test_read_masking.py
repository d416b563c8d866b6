"""Hidden values stay hidden on every read path: what the Entities API leaves
out of an answer is neither grouped, sorted, filtered, put in a cursor, nor
told by the change feed or a webhook (data/read/filters.py ``attribute_visible``
and ``compares_values``, events/visibility.py)."""
import base64
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import bearer, demo_id, get_token
from restsvc import ResourceRole, RowLevelRole
from test_events_feed import FAST, _open

CUSTOMER = demo_id("customer", 3)
ORDER = demo_id("order", 2)
SECRET_MAIL = "hidden-mail@example.com"
LINK = re.compile(r'^<([^>]*)>; rel="next"$')
ORDERS_ONLY = ResourceRole("t-orders-only", entities={"Order": "read"},
                           attributes={"Order": {"*": "view"}})
NO_COUNTRIES = ResourceRole("t-no-countries", entities={"Customer": "read"},
                            attributes={"Customer": {"*": "view"}})
WEBHOOK_SECRET = "a-webhook-secret-of-some-length"


def _auditor(client):
    return bearer(get_token(client, "auditor", "auditor-secret"))


def _change_email(client, auth, *emails):
    for email in emails:
        response = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
                              json={"email": email})
        assert response.status_code == 200, response.json


def _cursor_values(response):
    """The sort key the next page's cursor carries (its signed, readable payload)."""
    assert response.status_code == 200, response.get_data(as_text=True)
    url = LINK.match(response.headers["Link"]).group(1)
    token = parse_qs(urlsplit(url).query)["after"][0]
    payload = token.split(".")[0]
    _, values = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return values


@pytest.mark.parametrize("spec", [{"groupBy": ["changes"], "count": True},
                                  {"groupBy": ["entityName"], "countDistinct": ["changes"]}])
def test_history_changes_are_not_grouped_for_a_caller_that_may_not_view_their_values(
        client, auth, spec):
    _change_email(client, auth, SECRET_MAIL)
    auditor = _auditor(client)
    query = "&".join(f"{key}={','.join(value) if isinstance(value, list) else 'true'}"
                     for key, value in spec.items())
    for response in (client.post("/rest/entities/HistoryItem/aggregate", headers=auditor,
                                 json=spec),
                     client.get(f"/rest/entities/HistoryItem/aggregate?{query}",
                                headers=auditor)):
        assert response.status_code == 400, response.get_data(as_text=True)
        assert response.json["error"] == "Invalid aggregate request"
        assert "changes" in response.json["details"]
        assert SECRET_MAIL not in response.get_data(as_text=True)
    grouped = client.get("/rest/entities/HistoryItem/aggregate?groupBy=entityName&count=true",
                         headers=auditor)
    assert grouped.status_code == 200 and {"group": {"entityName": "Customer"}, "count": 1} \
        in grouped.json


def test_history_sorted_by_changes_keeps_their_values_out_of_the_order_and_the_cursor(
        client, auth):
    _change_email(client, auth, SECRET_MAIL, "b" + SECRET_MAIL)
    auditor = _auditor(client)
    response = client.get("/rest/entities/HistoryItem?sort=changes&limit=1", headers=auditor)
    assert len(_cursor_values(response)) == 1          # the id alone: changes is not a sort key
    assert SECRET_MAIL not in response.get_data(as_text=True) + response.headers["Link"]
    listed = client.get("/rest/entities/HistoryItem?limit=10", headers=auditor)
    assert {change.get("newValue") for item in listed.json for change in item["changes"]} == {None}


@pytest.mark.parametrize("spec", [{"groupBy": ["customer"], "count": True},
                                  {"groupBy": ["status"], "countDistinct": ["customer"]}])
def test_a_reference_to_an_entity_the_caller_may_not_read_is_not_grouped(
        client_with_roles, spec):
    c, orders_only = client_with_roles(ORDERS_ONLY)
    assert "customer" not in c.get(f"/rest/entities/Order/{ORDER}", headers=orders_only).json
    response = c.post("/rest/entities/Order/aggregate", headers=orders_only, json=spec)
    assert response.status_code == 400, response.json
    assert response.json["details"] == "Property for Order not found: customer"
    customer = demo_id("customer", 2)
    assert customer not in response.get_data(as_text=True)
    get = c.get("/rest/entities/Order/aggregate?groupBy=customer&count=true", headers=orders_only)
    assert get.status_code == 400 and customer not in get.get_data(as_text=True)


def test_a_reference_to_an_entity_the_caller_may_not_read_is_neither_filtered_nor_sorted(
        client_with_roles):
    c, orders_only = client_with_roles(ORDERS_ONLY)
    customer = demo_id("customer", 2)
    found = c.post("/rest/entities/Order/search", headers=orders_only, json={"filter": {
        "conditions": [{"property": "customer", "operator": "=", "value": customer}]}})
    assert found.status_code == 400, found.json
    assert found.json["details"] == "Property for Order not found: customer"
    page = c.get("/rest/entities/Order?sort=customer&limit=1", headers=orders_only)
    assert len(_cursor_values(page)) == 1          # sorted by the id alone
    full = bearer(get_token(c))
    assert len(_cursor_values(c.get("/rest/entities/Order?sort=customer&limit=1",
                                    headers=full))) > 1


def test_an_embedded_reference_to_an_entity_the_caller_may_not_read_is_not_filtered(
        client_with_roles):
    c, no_countries = client_with_roles(NO_COUNTRIES)
    loaded = c.get(f"/rest/entities/Customer/{CUSTOMER}?fetchPlan=_local", headers=no_countries)
    assert "country" not in (loaded.json.get("address") or {})
    found = c.post("/rest/entities/Customer/search", headers=no_countries, json={"filter": {
        "conditions": [{"property": "address.country", "operator": "=", "value": "DE"}]}})
    assert found.status_code == 400, found.json
    grouped = c.get("/rest/entities/Customer/aggregate?groupBy=address.country&count=true",
                    headers=no_countries)
    assert grouped.status_code == 400, grouped.json


def test_the_feed_names_the_writer_only_to_callers_that_may_see_who_wrote_the_row(make_app):
    from werkzeug.test import Client
    c = Client(make_app(FAST))
    full = bearer(get_token(c))
    reader = _open(c, bearer(get_token(c, "reader", "reader-secret")), "Customer")
    auditor = _open(c, _auditor(c), "Customer")
    assert c.put(f"/rest/entities/Customer/{CUSTOMER}", headers=full,
                 json={"name": "Seen", "email": SECRET_MAIL}).status_code == 200
    [seen_by_reader] = reader.events(1)
    [seen_by_auditor] = auditor.events(1)
    assert "username" not in seen_by_reader["json"]
    assert seen_by_reader["json"]["changed"] == ["name"]
    assert seen_by_auditor["json"]["username"] == "demo-client"
    reader.close()
    auditor.close()


_HOOKS_GOLD = RowLevelRole("t-hooks-gold-rows", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}})


@pytest.mark.parametrize("role, row_level", [
    (ResourceRole("t-hooks-orders", entities={"Order": "read"},
                  attributes={"Order": {"*": "view"}}, specifics=("rest.webhooks",)), ()),
    (ResourceRole("t-hooks-names", entities={"Customer": "read"},
                  attributes={"Customer": {"name": "view"}}, specifics=("rest.webhooks",)), ()),
    (ResourceRole("t-hooks-gold", entities={"Customer": "read"},
                  attributes={"Customer": {"*": "view"}}, specifics=("rest.webhooks",)),
     (_HOOKS_GOLD,)),
])
def test_a_webhook_is_only_for_callers_that_may_read_everything_its_events_show(
        client_with_roles, role, row_level):
    c, auth = client_with_roles(role, row_level=row_level,
                                overrides={"svc.webhooks.allow-private-addresses": True})
    body = {"url": "http://127.0.0.1:9/hook", "entities": ["Customer"], "kinds": ["UPDATE"],
            "secret": WEBHOOK_SECRET}
    response = c.post("/rest/webhooks", headers=auth, json=body)
    assert response.status_code == 403, response.json
    assert response.json["error"] == "Reading forbidden"
    full = bearer(get_token(c))
    assert c.get("/rest/webhooks", headers=full).json == []
    hook = c.post("/rest/webhooks", headers=full, json=body).json["id"]
    assert [h["id"] for h in c.get("/rest/webhooks", headers=full).json] == [hook]
    assert c.get("/rest/webhooks", headers=auth).json == []
    for path in (f"/rest/webhooks/{hook}", f"/rest/webhooks/{hook}/dead-letters"):
        assert c.get(path, headers=auth).status_code == 403, path
        assert c.get(path, headers=full).status_code == 200, path


def test_the_auditor_sees_who_deleted_and_changed_a_row_but_not_hidden_values(client, auth):
    _change_email(client, auth, SECRET_MAIL)
    assert client.delete(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).status_code == 204
    auditor = _auditor(client)
    loaded = client.get(f"/rest/entities/Customer/{CUSTOMER}?includeDeleted=true",
                        headers=auditor)
    assert loaded.status_code == 200, loaded.json
    row = loaded.json
    assert row["deletedBy"] == "demo-client" and row["deletedDate"]
    assert row["lastModifiedBy"] == "demo-client" and row["lastModifiedDate"]
    assert "email" not in row
    levels = {item["target"]: item["value"]
              for item in client.get("/rest/permissions", headers=auditor).json["entityAttributes"]}
    for name in ("createdBy", "lastModifiedBy", "lastModifiedDate", "deletedBy", "deletedDate"):
        assert levels[f"Customer:{name}"] == 1
    assert levels["Customer:email"] == 0


def test_history_shows_no_value_of_an_embedded_reference_to_an_entity_the_caller_may_not_read(
        client_with_roles):
    history_reader = ResourceRole("t-history-no-countries",
                                  entities={"Customer": "read", "HistoryItem": "read"},
                                  attributes={"Customer": {"*": "view"},
                                              "HistoryItem": {"*": "view"}})
    c, restricted = client_with_roles(history_reader)
    full = bearer(get_token(c))
    for country in ("FR", "AT"):
        assert c.put(f"/rest/entities/Customer/{CUSTOMER}", headers=full, json={
            "address": {"city": f"City {country}", "country": {"id": country}}}).status_code == 200
    response = c.get(f"/rest/entities/Customer/{CUSTOMER}/history", headers=restricted)
    assert response.status_code == 200, response.json
    changes = {change["name"]: change for change in response.json[0]["changes"]}
    assert changes["address.country"] == {"name": "address.country"}
    assert changes["address.city"]["newValue"] == "City AT"
    assert '"FR"' not in response.get_data(as_text=True)


def test_a_predefined_query_on_a_reference_the_caller_may_not_read_is_refused(client_with_roles):
    c, orders_only = client_with_roles(ORDERS_ONLY)
    customer = demo_id("customer", 2)
    for response in (c.get(f"/rest/queries/Order/ordersOfCustomer?customer={customer}",
                           headers=orders_only),
                     c.get(f"/rest/queries/Order/ordersOfCustomer/count?customer={customer}",
                           headers=orders_only)):
        assert response.status_code == 400, response.get_data(as_text=True)
        assert response.json["details"] == "Property for Order not found: customer"
    full = bearer(get_token(c))
    assert c.get(f"/rest/queries/Order/ordersOfCustomer?customer={customer}",
                 headers=full).json
