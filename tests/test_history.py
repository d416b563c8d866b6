"""Entity history (the entity log): HistoryItem, /history, retention."""
import dataclasses
import datetime
import decimal
import json

import yaml
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant
from restsvc import RowLevelRole
from restsvc.data.write.history import HistoryItem
from restsvc.cli import main
from restsvc.demo.roles import AUDITOR

CUSTOMER = demo_id("customer", 3)
ORDER = demo_id("order", 2)             # customer 2 is GOLD, three lines
HIDDEN_ORDER = demo_id("order", 0)      # customer 0 is BRONZE
PRODUCT = demo_id("product", 1)


def _history(client, auth, entity, entity_id, status=200, **params):
    response = client.get(f"/rest/entities/{entity}/{entity_id}/history", headers=auth,
                          query_string=params)
    assert response.status_code == status, response.get_data(as_text=True)
    return response.json


def _changes(item):
    return {change["name"]: change for change in item["changes"]}


def _auditor(client):
    return bearer(get_token(client, "auditor", "auditor-secret"))


def test_update_is_recorded_with_the_caller_and_old_and_new_values(client, auth):
    response = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
                          json={"name": "Renamed", "grade": "GOLD", "birthDate": None})
    assert response.status_code == 200, response.json
    [item] = _history(client, auth, "Customer", CUSTOMER)
    assert item["kind"] == "UPDATE" and item["username"] == "demo-client"
    assert item["entityName"] == "Customer" and item["entityId"] == CUSTOMER
    changes = _changes(item)
    assert changes["name"]["newValue"] == "Renamed" and changes["grade"]["newValue"] == "GOLD"
    assert changes["birthDate"]["newValue"] is None and changes["birthDate"]["oldValue"]
    assert "lastModifiedDate" not in changes and "version" not in changes


def test_an_update_that_changes_nothing_records_nothing(client, auth):
    name = client.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json["name"]
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": name})
    assert _history(client, auth, "Customer", CUSTOMER) == []


def test_order_with_lines_records_the_order_and_each_line(client, auth):
    created = client.post("/rest/entities/Order", headers=auth, json={
        "number": "H-1", "date": "2024-05-01", "customer": {"id": CUSTOMER},
        "lines": [{"product": {"id": PRODUCT}, "quantity": 2},
                  {"product": {"id": PRODUCT}, "quantity": 3}]})
    assert created.status_code == 201, created.json
    order_id = created.json["id"]
    [item] = _history(client, auth, "Order", order_id)
    changes = _changes(item)
    assert item["kind"] == "CREATE"
    assert changes["customer"] == {"name": "customer", "oldValue": None, "newValue": CUSTOMER}
    lines = changes["lines"]["newValue"]
    assert len(lines) == 2 and changes["lines"]["oldValue"] == []
    line = _history(client, auth, "OrderLine", lines[0])
    assert [i["kind"] for i in line] == ["CREATE"]
    # Replacing the lines: the order lists the line ids before and after.
    kept = client.get(f"/rest/entities/OrderLine/{lines[0]}", headers=auth).json
    client.put(f"/rest/entities/Order/{order_id}", headers=auth,
               json={"lines": [{"id": kept["id"], "quantity": 5}]})
    newest = _history(client, auth, "Order", order_id)[0]
    assert _changes(newest)["lines"] == {"name": "lines", "oldValue": sorted(lines),
                                         "newValue": [kept["id"]]}
    assert [i["kind"] for i in _history(client, auth, "OrderLine", lines[0])] == ["UPDATE", "CREATE"]
    assert _changes(_history(client, auth, "OrderLine", lines[0])[0])["quantity"] == {
        "name": "quantity", "oldValue": 2, "newValue": 5}
    assert [i["kind"] for i in _history(client, auth, "OrderLine", lines[1])] == ["DELETE", "CREATE"]
    # Deleting the order: its item, and one for each line that goes with it.
    assert client.delete(f"/rest/entities/Order/{order_id}", headers=auth).status_code == 204
    deleted = _history(client, auth, "Order", order_id)[0]
    assert deleted["kind"] == "DELETE" and _changes(deleted)["number"]["oldValue"] == "H-1"
    assert _history(client, auth, "OrderLine", lines[0])[0]["kind"] == "DELETE"


def test_a_rolled_back_write_leaves_no_history(client, auth):
    current = client.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json
    other = demo_id("customer", 4)
    response = client.put("/rest/entities/Customer", headers=auth, json=[
        {"id": CUSTOMER, "name": "First"},
        {"id": other, "name": "Second", "version": 99}])      # stale: optimistic lock fails
    assert response.status_code == 400 and response.json["error"] == "Optimistic lock"
    assert client.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json["name"] == \
        current["name"]
    assert _history(client, auth, "Customer", CUSTOMER) == []
    assert _history(client, auth, "Customer", other) == []


def test_a_bulk_update_is_recorded_per_row(client, auth):
    ids = [demo_id("customer", n) for n in (5, 6, 7)]
    response = client.put("/rest/entities/Customer", headers=auth,
                          json=[{"id": key, "name": f"Bulk {key}"} for key in ids])
    assert response.status_code == 200, response.json
    for key in ids:
        [item] = _history(client, auth, "Customer", key)
        assert item["kind"] == "UPDATE" and item["username"] == "demo-client"


def test_a_service_write_is_recorded_with_the_callers_name(client, auth):
    admin = bearer(password_grant(client, "admin", "admin-password").json["access_token"])
    response = client.post("/rest/services/orderService/createOrder", headers=admin, json={
        "order": {"number": "S-1", "date": "2025-03-01", "customer": {"id": CUSTOMER},
                  "lines": [{"product": {"id": PRODUCT}, "quantity": 2}]}})
    assert response.status_code == 200, response.get_data(as_text=True)
    items = _history(client, auth, "Order", response.json["id"])
    assert [(i["kind"], i["username"]) for i in items] == [("UPDATE", "admin"), ("CREATE", "admin")]
    assert "amount" in _changes(items[0])


def test_history_items_are_searchable_and_counted_like_any_entity(client, auth):
    for n in (1, 2):
        client.put(f"/rest/entities/Customer/{demo_id('customer', n)}", headers=auth,
                   json={"grade": "GOLD" if n == 1 else "SILVER"})
    query = json.dumps({"conditions": [
        {"property": "entityName", "operator": "=", "value": "Customer"},
        {"property": "kind", "operator": "=", "value": "UPDATE"}]})
    response = client.get("/rest/entities/HistoryItem/search", headers=auth,
                          query_string={"filter": query, "sort": "-changedDate",
                                        "returnCount": "true"})
    assert response.status_code == 200, response.json
    assert response.headers["X-Total-Count"] == str(len(response.json)) and len(response.json) >= 2
    assert response.json[0]["entityId"] == demo_id("customer", 2)


def test_nobody_writes_history_items(client, auth):
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "X"})
    [item] = _history(client, auth, "Customer", CUSTOMER)
    assert client.post("/rest/entities/HistoryItem", headers=auth,
                       json={"entityName": "Customer", "entityId": CUSTOMER}).status_code == 403
    assert client.put(f"/rest/entities/HistoryItem/{item['id']}", headers=auth,
                      json={"username": "nobody"}).status_code == 403
    assert client.delete(f"/rest/entities/HistoryItem/{item['id']}",
                         headers=auth).status_code == 403


def test_history_of_an_unknown_entity_is_404(client, auth):
    response = client.get(f"/rest/entities/Nothing/{CUSTOMER}/history", headers=auth)
    assert response.status_code == 404 and response.json["error"] == "Entity not found"
    response = client.get("/rest/entities/Tag/1/history", headers=auth)    # keeps no history
    assert response.status_code == 404 and response.json["error"] == "History not found"


def test_reading_history_needs_a_grant(client, auth, reader_auth):
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "X"})
    response = client.get(f"/rest/entities/Customer/{CUSTOMER}/history", headers=reader_auth)
    assert response.status_code == 403
    assert client.get("/rest/entities/HistoryItem", headers=reader_auth).status_code == 403
    assert [i["kind"] for i in _history(client, _auditor(client), "Customer", CUSTOMER)] == ["UPDATE"]


def test_hidden_attributes_appear_in_history_without_values(client, auth):
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
               json={"email": "secret@example.com", "name": "Visible"})
    auditor = _auditor(client)
    for items in (_history(client, auditor, "Customer", CUSTOMER),
                  client.get("/rest/entities/HistoryItem", headers=auditor).json):
        changes = _changes(items[0])
        assert changes["email"] == {"name": "email"}
        assert changes["name"]["newValue"] == "Visible"
        assert "secret@example.com" not in json.dumps(items)


def test_row_level_rules_of_the_entity_apply_to_its_history(client_with_roles):
    gold = RowLevelRole("t-gold-orders", filters={"Order": {"conditions": [
        {"property": "customer.grade", "operator": "=", "value": "GOLD"}]}})
    c, restricted = client_with_roles(dataclasses.replace(AUDITOR, code="t-auditor"),
                                      row_level=(gold,))
    full = bearer(get_token(c))
    for order in (ORDER, HIDDEN_ORDER):
        assert c.put(f"/rest/entities/Order/{order}", headers=full,
                     json={"number": f"N-{order[:4]}"}).status_code == 200
    assert len(_history(c, restricted, "Order", ORDER)) == 1
    assert _history(c, restricted, "Order", HIDDEN_ORDER) == []
    listed = c.get("/rest/entities/HistoryItem", headers=restricted).json
    assert {i["entityId"] for i in listed} == {ORDER}


def test_prune_removes_items_older_than_the_retention(make_app, tmp_path, capsys):
    app = make_app({"svc.history.retention": "1d"})
    c = Client(app)
    auth = bearer(get_token(c))
    c.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "Old"})
    c.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"name": "New"})
    oldest = _history(c, auth, "Customer", CUSTOMER)[-1]
    long_ago = datetime.datetime(2020, 1, 1)
    HistoryItem.update(changedDate=long_ago).where(HistoryItem.id == oldest["id"]).execute()
    config = tmp_path / "prune.yaml"
    config.write_text(yaml.safe_dump({"svc": {
        "application": "restsvc.demo:application", "secret-key": "prune-test-secret-key",
        "data-dir": str(tmp_path), "history": {"retention": "1d"},
        "datasource": {"url": app.settings.database_url, "init-schema": False}}}))
    assert main(["--config", str(config), "history", "prune", "--batch-size", "1"]) == 0
    assert "history items removed: 1" in capsys.readouterr().out
    assert [i["changes"][0]["newValue"] for i in _history(c, auth, "Customer", CUSTOMER)] == ["New"]


def test_an_update_at_a_stale_version_records_nothing_and_one_at_the_current_does(client, auth):
    current = client.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json
    stale = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
                       json={"name": "Stale", "version": current["version"] + 5})
    assert stale.status_code == 400 and stale.json["error"] == "Optimistic lock"
    assert _history(client, auth, "Customer", CUSTOMER) == []
    fresh = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
                       json={"name": "Fresh", "version": current["version"]})
    assert fresh.status_code == 200, fresh.json
    [item] = _history(client, auth, "Customer", CUSTOMER)
    assert _changes(item)["name"] == {"name": "name", "oldValue": current["name"],
                                      "newValue": "Fresh"}
    gone = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers={
        **auth, "If-Match": f'"{current["version"]}"'}, json={"name": "Late"})
    assert gone.status_code == 412
    assert len(_history(client, auth, "Customer", CUSTOMER)) == 1


def test_a_bulk_delete_is_recorded_per_row_and_items_filter_by_who(client, auth):
    ids = [demo_id("customer", n) for n in (8, 9)]
    response = client.delete("/rest/entities/Customer", headers=auth,
                             json=[{"id": key} for key in ids])
    assert response.status_code == 204, response.get_data(as_text=True)
    for key in ids:
        [item] = _history(client, auth, "Customer", key)
        assert item["kind"] == "DELETE" and item["username"] == "demo-client"
    query = json.dumps({"conditions": [
        {"property": "username", "operator": "=", "value": "demo-client"},
        {"property": "kind", "operator": "=", "value": "DELETE"}]})
    found = client.get("/rest/entities/HistoryItem/search", headers=auth,
                       query_string={"filter": query, "sort": "entityId"}).json
    assert {i["entityId"] for i in found} == set(ids)
    schemas = client.get("/rest/docs/openapiDetailed.json",
                         headers=_auditor(client)).json["components"]["schemas"]
    assert any("HistoryItem" in name for name in schemas)


def _exact(response):
    """A JSON answer with its numbers as written (13.50 stays 13.50)."""
    assert response.status_code in (200, 201), response.get_data(as_text=True)
    return json.loads(response.get_data(as_text=True), parse_float=decimal.Decimal)


def _price_change(client, auth, line_id, kind):
    items = _exact(client.get(f"/rest/entities/OrderLine/{line_id}/history", headers=auth))
    [item] = [item for item in items if item["kind"] == kind]
    [change] = [change for change in item["changes"] if change["name"] == "price"]
    return [str(change.get(key)) for key in ("oldValue", "newValue")]


def test_history_writes_decimals_at_their_scale_as_the_entity_does(client, auth):
    """13.5 sent, 249 stored by SQLite for 249.00: history writes 13.50 and
    249.00, as the entity's own answers do (reference 1.4)."""
    created = _exact(client.post("/rest/entities/OrderLine?responseFetchPlan=_base", headers=auth, json={
        "order": {"id": ORDER}, "product": {"id": PRODUCT}, "quantity": 1, "price": 13.5}))
    line = created["id"]
    assert str(created["price"]) == "13.50"
    assert _price_change(client, auth, line, "CREATE") == ["None", "13.50"]
    updated = _exact(client.put(f"/rest/entities/OrderLine/{line}?responseFetchPlan=_base",
                                headers=auth, json={"price": 249}))
    assert str(updated["price"]) == "249.00"
    assert _price_change(client, auth, line, "UPDATE") == ["13.50", "249.00"]
    assert client.delete(f"/rest/entities/OrderLine/{line}", headers=auth).status_code == 204
    auditor = _auditor(client)
    assert _price_change(client, auditor, line, "DELETE") == ["249.00", "None"]


def test_history_writes_a_date_time_to_the_millisecond_as_the_entity_does(client, auth):
    """A RESTORE item's deletedDate (a dateTime) is the entity's own form of it."""
    from restsvc.demo.model import Customer
    customer = client.post("/rest/entities/Customer", headers=auth, json={"name": "Gone"}).json["id"]
    assert client.delete(f"/rest/entities/Customer/{customer}", headers=auth).status_code == 204
    Customer.update(deletedDate=datetime.datetime(2026, 11, 28, 20, 10, 12, 907980)).where(
        Customer.id == customer).execute()
    deleted = client.get(f"/rest/entities/Customer/{customer}?includeDeleted=true",
                         headers=auth).json["deletedDate"]
    assert deleted == "2026-11-28T20:10:12.907"
    assert client.post(f"/rest/entities/Customer/{customer}/restore", headers=auth).status_code == 200
    [restored] = [item for item in _history(client, auth, "Customer", customer)
                  if item["kind"] == "RESTORE"]
    assert _changes(restored)["deletedDate"]["oldValue"] == deleted


def test_a_writes_history_item_and_event_bear_the_instant_of_its_audit_fields(client, auth):
    """One write, one instant (to the microsecond, as stored): the row's audit
    or deletion date, its history item's changedDate and its change event's
    time, for a create, an update, a (soft) delete and a restore."""
    from restsvc.data.write.history import HistoryItem
    from restsvc.demo.model import Customer
    from restsvc.events.outbox import ChangeEvent
    created = client.post("/rest/entities/Customer", headers=auth, json={"name": "One instant"})
    assert created.status_code == 201, created.json
    customer = created.json["id"]
    instants = [Customer.get_by_id(customer).lastModifiedDate]
    assert client.put(f"/rest/entities/Customer/{customer}", headers=auth,
                      json={"name": "One instant, renamed"}).status_code == 200
    instants.append(Customer.get_by_id(customer).lastModifiedDate)
    assert client.delete(f"/rest/entities/Customer/{customer}", headers=auth).status_code == 204
    instants.append(Customer.get_by_id(customer).deletedDate)
    assert client.post(f"/rest/entities/Customer/{customer}/restore", headers=auth).status_code == 200
    row = Customer.get_by_id(customer)
    instants.append(row.lastModifiedDate)
    assert row.createdDate == instants[0] and len(set(instants)) == 4
    items = list(HistoryItem.select(HistoryItem.kind, HistoryItem.changedDate).where(
        HistoryItem.entityId == customer).order_by(HistoryItem.changedDate).tuples())
    events = list(ChangeEvent.select(ChangeEvent.kind, ChangeEvent.time).where(
        ChangeEvent.entityId == customer).order_by(ChangeEvent.seq).tuples())
    assert items == list(zip(["CREATE", "UPDATE", "DELETE", "RESTORE"], instants))
    assert events == list(zip(["CREATE", "UPDATE", "DELETE", "UPDATE"], instants))
    answered = {item["kind"]: item["changedDate"] for item in _history(client, auth, "Customer", customer)}
    stored = client.get(f"/rest/entities/Customer/{customer}", headers=auth).json
    assert (answered["CREATE"], answered["RESTORE"]) == (stored["createdDate"], stored["lastModifiedDate"])
