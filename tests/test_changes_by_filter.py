"""Changes by filter: PUT and DELETE /rest/entities/<e>/search change every
row a filter finds, in one transaction, through the one write path; a
guard (maxRows) bounds them, and a dry run only counts."""
import re

import pytest

from conftest import bearer, demo_id, password_grant, statements_sent
from restsvc import ResourceRole
from restsvc.data.write.history import HistoryItem
from restsvc.events import outbox
from restsvc.events.outbox import ChangeEvent

OWN_CUSTOMER = demo_id("customer", 1)
OWN_ORDER, OTHER_ORDER = demo_id("order", 1), demo_id("order", 2)
SEARCH = "/rest/entities/Customer/search"


def _named(prefix):
    return {"conditions": [{"property": "name", "operator": "startsWith", "value": prefix}]}


def _create(client, auth, *names):
    ids = []
    for name in names:
        response = client.post("/rest/entities/Customer", json={"name": name}, headers=auth)
        assert response.status_code == 201, response.json
        ids.append(response.json["id"])
    return ids


def _emails(client, auth, prefix):
    found = client.post(SEARCH, json={"filter": _named(prefix), "fetchPlan": "_local"},
                        headers=auth)
    assert found.status_code == 200, found.json
    return sorted((row["name"], row.get("email")) for row in found.json)


def _traces(app):
    """How many history items and change events are stored."""
    outbox.assign(app.database)
    return HistoryItem.select().count(), ChangeEvent.select().count()


def test_update_by_filter_sets_the_values_on_every_matching_row_with_history_and_events(
        app, client, auth):
    _create(client, auth, "Bulk A", "Bulk B", "Other C")
    history, events = _traces(app)
    response = client.put(SEARCH, json={"filter": _named("Bulk"), "values": {"email": "b@x.example"}},
                          headers=auth)
    assert response.status_code == 200, response.json
    assert response.json == {"count": 2, "dryRun": False}
    assert _emails(client, auth, "Bulk") == [("Bulk A", "b@x.example"), ("Bulk B", "b@x.example")]
    assert _emails(client, auth, "Other") == [("Other C", None)]
    assert _traces(app) == (history + 2, events + 2)
    item = client.get(f"/rest/entities/Customer/{_create(client, auth, 'x')[0]}/history",
                      headers=auth)
    assert item.status_code == 200


_STATEMENT = re.compile(r'(INSERT|UPDATE|SELECT)(?: INTO| .*? FROM)? "(customer|history_item|restsvc_event)"')


def test_a_change_by_filter_sends_as_many_statements_whatever_the_number_of_rows(
        app, client, auth, monkeypatch):
    """What is checked per row (visibility, the stored entity the validators
    see) and the values its history item and event compare with are read
    for all rows at once; the rows' UPDATE, their history items and their
    events go to their tables in one statement each."""
    counts = {}
    for size in (3, 40):
        _create(client, auth, *[f"Many{size} {i:02d}" for i in range(size)])
        counts[size] = statements_sent(app, monkeypatch, lambda size=size: client.put(
            SEARCH, json={"filter": _named(f"Many{size} "), "values": {"email": f"{size}@x.example"}},
            headers=auth), _STATEMENT)
        assert _emails(client, auth, f"Many{size} ") == [
            (f"Many{size} {i:02d}", f"{size}@x.example") for i in range(size)]
        assert counts[size][("INSERT", "history_item")] == 1, counts
        assert counts[size][("INSERT", "restsvc_event")] == 1, counts
        assert counts[size][("UPDATE", "customer")] == 1, counts
    assert counts[40] == counts[3]


_PRODUCT_STATEMENT = re.compile(r'(INSERT|UPDATE|SELECT)(?: INTO| .*? FROM)? "(product)"')


def _products(client, auth, prefix, count):
    body = [{"name": f"{prefix} {i:02d}", "price": i + 1} for i in range(count)]
    response = client.post("/rest/entities/Product", json=body, headers=auth)
    assert response.status_code == 201, response.json
    return [row["id"] for row in response.json]


def _stored(client, auth, ids):
    return [client.get(f"/rest/entities/Product/{entity_id}?fetchPlan=_local", headers=auth).json
            for entity_id in ids]


def test_rows_without_history_or_events_are_changed_together_too(app, client, auth, monkeypatch):
    """Product records no history and no events: its rows' versions are read
    together, and one UPDATE changes them all, each a version more."""
    counts = {}
    for size in (3, 40):
        ids = _products(client, auth, f"Together{size}", size)
        counts[size] = statements_sent(app, monkeypatch, lambda size=size: client.put(
            "/rest/entities/Product/search", json={"filter": _named(f"Together{size} "),
                                                   "values": {"description": f"{size} of them"}},
            headers=auth), _PRODUCT_STATEMENT)
        assert [(row["description"], row["version"]) for row in _stored(client, auth, ids)] \
            == [(f"{size} of them", 2)] * size
    assert counts[40] == counts[3] and counts[3][("UPDATE", "product")] == 1, counts


@pytest.mark.parametrize("entity, bodies, values", [
    ("Tag", [{"name": "Grouped one"}, {"name": "Grouped two"}], {"internal": True}),
    ("Country", [{"id": "QA", "name": "Grouped A"}, {"id": "QB", "name": "Grouped B"}],
     {"name": "Grouped"}),
])
def test_rows_whose_ids_are_numbers_or_text_are_changed_together_too(client, auth, entity, bodies,
                                                                     values):
    created = client.post(f"/rest/entities/{entity}", json=bodies, headers=auth)
    assert created.status_code == 201, created.json
    ids = [row["id"] for row in created.json]
    response = client.put(f"/rest/entities/{entity}/search", headers=auth, json={
        "filter": _named("Grouped "), "values": values})
    assert response.json == {"count": 2, "dryRun": False}
    for entity_id in ids:
        row = client.get(f"/rest/entities/{entity}/{entity_id}?fetchPlan=_local", headers=auth).json
        assert {name: row[name] for name in values} == values and row["version"] == 2


def test_a_change_that_sets_no_known_attribute_only_raises_the_versions(client, auth):
    """Unknown attributes are ignored, as in a single update: the rows keep
    their values and get a new version (was a 500: an UPDATE setting nothing)."""
    created = client.post("/rest/entities/Tag", headers=auth,
                          json=[{"name": "Unset one"}, {"name": "Unset two"}])
    assert created.status_code == 201, created.json
    for method, path, body in (
            ("PUT", "/rest/entities/Tag/search", {"filter": _named("Unset "), "values": {"nope": 1}}),
            ("PUT", "/rest/entities/Tag", [{"id": row["id"]} for row in created.json])):
        response = client.open(path, method=method, json=body, headers=auth)
        assert response.status_code == 200, response.json
    for row, name in zip(created.json, ("Unset one", "Unset two")):
        stored = client.get(f"/rest/entities/Tag/{row['id']}?fetchPlan=_local", headers=auth).json
        assert (stored["name"], stored["version"]) == (name, 3)


def test_a_change_the_database_refuses_changes_no_row(client, auth):
    """A unique column set to one value on two rows: the grouped UPDATE
    fails as a whole, with the write's own error."""
    ids = _products(client, auth, "Unique", 2)
    response = client.put("/rest/entities/Product/search", headers=auth, json={
        "filter": _named("Unique "), "values": {"sku": "SAME-SKU", "description": "x"}})
    assert response.status_code == 400, response.json
    assert response.json["error"] == "Entity update failed"
    assert [(row.get("sku"), row.get("description")) for row in _stored(client, auth, ids)] \
        == [(None, None), (None, None)]


def test_a_bulk_update_checks_each_rows_version_and_one_stale_changes_none(app, make_app):
    from werkzeug.test import Client
    from conftest import get_token
    client = Client(make_app({"svc.rest.optimistic-locking-enabled": True}))
    auth = bearer(get_token(client))
    ids = _create(client, auth, "Versioned A", "Versioned B", "Versioned C")
    stale = [{"id": entity_id, "version": 1, "email": "v@x.example"} for entity_id in ids]
    stale[1]["version"] = 2
    response = client.put("/rest/entities/Customer", json=stale, headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Optimistic lock"
    assert ids[1] in response.json["details"]
    assert _emails(client, auth, "Versioned") == [(f"Versioned {n}", None) for n in "ABC"]
    start = outbox.position(app.database)
    stale[1]["version"] = 1
    response = client.put("/rest/entities/Customer", json=stale, headers=auth)
    assert response.status_code == 200, response.json
    assert [client.get(f"/rest/entities/Customer/{entity_id}?fetchPlan=_local", headers=auth)
            .json["version"] for entity_id in ids] == [2, 2, 2]
    outbox.assign(app.database)
    assert [(event["entityId"], event["version"]) for event in outbox.read(app.database, start)] \
        == [(entity_id, 2) for entity_id in ids]
    response = client.put("/rest/entities/Customer", json=stale, headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Optimistic lock"


def _left(ids):
    """Each row's history: kind, user, the attributes changed and the email's old and new value."""
    return [[(item.kind, item.username, sorted(change["name"] for change in item.changes),
              [(change.get("oldValue"), change.get("newValue")) for change in item.changes
               if change["name"] == "email"])
             for item in HistoryItem.select().where(HistoryItem.entityId == entity_id)
             .order_by(HistoryItem.changedDate)]
            for entity_id in ids]


def test_a_change_by_filter_leaves_what_the_same_updates_one_at_a_time_leave(app, client, auth):
    alone = _create(client, auth, "Alone 1", "Alone 2", "Alone 3")
    together = sorted(_create(client, auth, "Together 1", "Together 2", "Together 3"))
    start = outbox.position(app.database)
    for entity_id in alone:
        response = client.put(f"/rest/entities/Customer/{entity_id}",
                              json={"email": "same@x.example"}, headers=auth)
        assert response.status_code == 200, response.json
    response = client.put(SEARCH, json={"filter": _named("Together"),
                                        "values": {"email": "same@x.example"}}, headers=auth)
    assert response.json == {"count": 3, "dryRun": False}
    assert _left(together) == _left(alone)
    assert _left(together)[0][-1][3] == [(None, "same@x.example")]
    outbox.assign(app.database)
    events = outbox.read(app.database, start)
    assert [event["entityId"] for event in events] == alone + together    # in the rows' order
    shape = [(e["entity"], e["kind"], e["changed"], e["version"]) for e in events]
    assert shape[:3] == shape[3:] == [("Customer", "UPDATE", ["email"], 2)] * 3


def _before(app, start, ids):
    """{row: (its history's (old, new) email, its event's values before)} of
    the changes after ``start`` (the instant it was last modified: whether it has one)."""
    outbox.assign(app.database)
    events = outbox.read(app.database, start)
    previous = outbox.previous(app.database, [event["id"] for event in events])
    return {entity_id: (_left([entity_id])[0][-1][3],
                        [{**previous[event["id"]], "lastModifiedDate":
                          previous[event["id"]]["lastModifiedDate"] is not None}
                         for event in events if event["entityId"] == entity_id])
            for entity_id in ids}


def test_each_row_changed_together_keeps_its_own_values_before(app, client, auth):
    """Values before are read for all rows of a change at once: each row's
    history item and event still hold that row's own, its audit fields
    included (an event's were null: they are not in the history), also when
    the rows of one bulk write different attributes."""
    emails = {}
    for i in range(3):
        response = client.post("/rest/entities/Customer", headers=auth,
                               json={"name": f"Own {i}", "email": f"own{i}@x.example", "grade": "GOLD"})
        assert response.status_code == 201, response.json
        emails[response.json["id"]] = f"own{i}@x.example"
    start = outbox.position(app.database)
    response = client.put(SEARCH, json={"filter": _named("Own "), "values": {"email": "all@x.example"}},
                          headers=auth)
    assert response.json == {"count": 3, "dryRun": False}
    audited = {"lastModifiedBy": "demo-client", "lastModifiedDate": True}
    assert _before(app, start, emails) == {
        entity_id: ([(old, "all@x.example")], [{"email": old, **audited}])
        for entity_id, old in emails.items()}
    ids = list(emails)
    start = outbox.position(app.database)
    response = client.post("/rest/entities/Customer", headers=auth, json=[
        {"id": ids[0], "email": "first@x.example"}, {"id": ids[1], "grade": "SILVER"},
        {"id": ids[2], "email": "last@x.example", "grade": "BRONZE"}])
    assert response.status_code == 201, response.json
    assert _before(app, start, ids) == {
        ids[0]: ([("all@x.example", "first@x.example")], [{"email": "all@x.example", **audited}]),
        ids[1]: ([], [{"grade": "GOLD", **audited}]),
        ids[2]: ([("all@x.example", "last@x.example")],
                 [{"email": "all@x.example", "grade": "GOLD", **audited}])}
    start = outbox.position(app.database)      # and a row changed alone, as before
    response = client.put(f"/rest/entities/Customer/{ids[0]}", json={"email": "alone@x.example"},
                          headers=auth)
    assert response.status_code == 200, response.json
    assert _before(app, start, ids[:1]) == {
        ids[0]: ([("first@x.example", "alone@x.example")], [{"email": "first@x.example", **audited}])}


def test_delete_by_filter_soft_deletes_the_matching_rows(app, client, auth):
    ids = _create(client, auth, "Gone A", "Gone B")
    history, events = _traces(app)
    response = client.delete(SEARCH, json={"filter": _named("Gone")}, headers=auth)
    assert response.status_code == 200, response.json
    assert response.json == {"count": 2, "dryRun": False}
    assert _emails(client, auth, "Gone") == []
    for entity_id in ids:
        kept = client.get(f"/rest/entities/Customer/{entity_id}?includeDeleted=true", headers=auth)
        assert kept.status_code == 200 and kept.json["deletedDate"]
    assert _traces(app) == (history + 2, events + 2)


def test_a_change_over_the_guard_is_409_naming_the_count_and_changes_nothing(app, client, auth):
    _create(client, auth, "Many A", "Many B", "Many C")
    traces = _traces(app)
    for method in (client.put, client.delete):
        response = method(SEARCH, json={"filter": _named("Many"), "values": {"email": "m@x.example"},
                                        "maxRows": 2}, headers=auth)
        assert response.status_code == 409, response.json
        assert response.json["error"] == "Too many rows"
        assert "matches 3 rows" in response.json["details"]
        assert "at most 2" in response.json["details"]
    assert _emails(client, auth, "Many") == [("Many A", None), ("Many B", None), ("Many C", None)]
    assert _traces(app) == traces


def test_the_guard_defaults_to_the_setting_which_also_bounds_max_rows(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    client = Client(make_app({"svc.rest.max-change-rows": 2}))
    auth = bearer(get_token(client))
    _create(client, auth, "Cap A", "Cap B", "Cap C")
    over = client.put(SEARCH, json={"filter": _named("Cap"), "values": {"email": "c@x.example"}},
                      headers=auth)
    assert over.status_code == 409 and "at most 2" in over.json["details"]
    above = client.delete(SEARCH, json={"filter": _named("Cap"), "maxRows": 3}, headers=auth)
    assert above.status_code == 400 and "from 1 to 2" in above.json["details"]
    assert _emails(client, auth, "Cap") == [("Cap A", None), ("Cap B", None), ("Cap C", None)]


def test_a_dry_run_answers_the_count_and_writes_nothing(app, client, auth):
    _create(client, auth, "Dry A", "Dry B", "Dry C")
    traces = _traces(app)
    body = {"filter": _named("Dry"), "values": {"email": "d@x.example"}, "maxRows": 1}
    for method in (client.put, client.delete):
        response = method(f"{SEARCH}?dryRun=true", json=body, headers=auth)
        assert response.status_code == 200, response.json
        assert response.json == {"count": 3, "dryRun": True}
    assert _emails(client, auth, "Dry") == [("Dry A", None), ("Dry B", None), ("Dry C", None)]
    assert _traces(app) == traces


@pytest.fixture
def bruno(client):
    response = password_grant(client, "bruno", "bruno-password")
    assert response.status_code == 200, response.get_data(as_text=True)
    return bearer(response.json["access_token"])


def _ids(*ids):
    return {"conditions": [{"property": "id", "operator": "in", "value": list(ids)}]}


def _status(client, auth, order_id):
    return client.get(f"/rest/entities/Order/{order_id}", headers=auth).json["status"]


def test_row_rules_apply_to_every_row_and_one_refusal_changes_nothing(client, auth, bruno):
    """bruno may change his own orders unless SHIPPED: one shipped row among
    those the filter finds refuses the whole change."""
    assert client.put(f"/rest/entities/Order/{OWN_ORDER}", json={"status": "NEW"},
                      headers=auth).status_code == 200
    shipped = client.post("/rest/entities/Order", headers=auth, json={
        "number": "R-2", "date": "2025-03-01", "status": "SHIPPED",
        "customer": {"id": OWN_CUSTOMER}}).json["id"]
    for method in (client.put, client.delete):
        both = method("/rest/entities/Order/search", headers=bruno, json={
            "filter": _ids(OWN_ORDER, shipped), "values": {"status": "PAID"}})
        assert both.status_code == 403, both.json
    assert (_status(client, auth, OWN_ORDER), _status(client, auth, shipped)) == ("NEW", "SHIPPED")
    hidden = client.put("/rest/entities/Order/search", headers=bruno, json={
        "filter": _ids(OTHER_ORDER), "values": {"status": "PAID"}})
    assert hidden.json == {"count": 0, "dryRun": False}       # not his: not found
    own = client.put("/rest/entities/Order/search", headers=bruno, json={
        "filter": _ids(OWN_ORDER), "values": {"status": "PAID"}})
    assert own.status_code == 200 and own.json["count"] == 1
    assert _status(client, auth, OWN_ORDER) == "PAID"


EDITOR = ResourceRole("customer-name-editor", "Customers: names only",
                      entities={"Customer": "read,update"},
                      attributes={"Customer": {"*": "view", "name": "modify"}})


def test_attribute_permissions_apply_as_for_single_writes(client, auth, client_with_roles):
    ids = _create(client, auth, "Attr A")
    tester, headers = client_with_roles(EDITOR)
    response = tester.put(SEARCH, headers=headers, json={
        "filter": _ids(*ids), "values": {"name": "Attr B", "email": "not@allowed.example"}})
    assert response.status_code == 200, response.json
    stored = tester.get(f"/rest/entities/Customer/{ids[0]}?fetchPlan=_local", headers=headers).json
    assert stored["name"] == "Attr B" and stored.get("email") is None
    assert tester.delete(SEARCH, headers=headers, json={"filter": _ids(*ids)}).status_code == 403


def test_a_caller_without_the_entity_permission_is_refused(client, reader_auth):
    for method in (client.put, client.delete):
        response = method(SEARCH, json={"filter": _named("A"), "values": {"email": "r@x.example"}},
                          headers=reader_auth)
        assert response.status_code == 403, response.json


@pytest.mark.parametrize("method, body, query, error", [
    ("PUT", [1, 2], "", "Malformed request JSON data structure"),
    ("PUT", {"values": {"email": "x"}}, "", "Cannot parse entities filter"),
    ("PUT", {"filter": {"conditions": []}}, "", "Malformed request JSON data structure"),
    ("PUT", {"filter": {"conditions": []}, "values": []}, "", "Malformed request JSON data structure"),
    ("PUT", {"filter": {"conditions": []}, "values": {"id": "x"}}, "", "Invalid parameter value"),
    ("PUT", {"filter": {"conditions": []}, "values": {"version": 3}}, "", "Invalid parameter value"),
    ("PUT", {"filter": {"conditions": []}, "values": {"name": "x"}, "maxRows": 0}, "",
     "Invalid parameter value"),
    ("DELETE", {"filter": {"conditions": []}, "maxRows": "5"}, "", "Invalid parameter value"),
    ("DELETE", {"filter": {"conditions": []}, "maxRows": True}, "", "Invalid parameter value"),
    ("DELETE", {"filter": {"conditions": []}}, "?dryRun=maybe", "Invalid parameter value"),
    ("DELETE", {"filter": "name = 1"}, "", "Malformed request JSON data structure"),
    ("DELETE", {"filter": {"conditions": [{"property": "nope", "operator": "=", "value": 1}]}},
     "", "Cannot parse entities filter"),
    ("PUT", {"filter": {"conditions": []}, "values": {"birthDate": "not a date"}}, "",
     "birthDate"),
])
def test_bad_input_is_a_clear_400_and_changes_nothing(client, auth, method, body, query, error):
    before = client.get("/rest/entities/Customer?limit=1000&fetchPlan=_local", headers=auth).json
    response = client.open(f"{SEARCH}{query}", method=method, json=body, headers=auth)
    assert response.status_code == 400, response.json
    if isinstance(response.json, list):         # violations: their paths name the attribute
        assert error in response.json[0]["path"]
    else:
        assert response.json["error"] == error
    assert client.get("/rest/entities/Customer?limit=1000&fetchPlan=_local",
                      headers=auth).json == before


def test_the_collection_put_and_delete_keep_their_array_bodies(client, auth):
    response = client.put("/rest/entities/Customer", json={"filter": {"conditions": []}},
                          headers=auth)
    assert response.status_code == 400
    assert response.json["error"] == "The body of bulk update request should be an array"
    response = client.delete("/rest/entities/Customer", json={"filter": {"conditions": []}},
                             headers=auth)
    assert response.status_code == 400
