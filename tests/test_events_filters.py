"""Filters on the change feed (GET /rest/events?entity=X&filter=...) and on
webhook subscriptions: the Entities API's filter grammar, judged on the row
after a change (a delete: before), an update leaving the filter sent once
with "match": false (restsvc/events/matching.py)."""
import dataclasses
import json

from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from restsvc import ResourceRole, RowLevelRole
from test_events_feed import FAST, Reader
from test_events_webhooks import QUICK, _deliverer
from webhook_support import Receiver

CUSTOMER = demo_id("customer", 3)
GOLD = {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}


def _open(client, auth, entity, spec, **extra):
    query = [("entity", entity), ("filter", spec if isinstance(spec, str) else json.dumps(spec))]
    query += list(extra.items())
    return client.get("/rest/events", query_string=query, headers=auth, buffered=False)


def _put(client, auth, values, customer=CUSTOMER, entity="Customer"):
    response = client.put(f"/rest/entities/{entity}/{customer}", headers=auth, json=values)
    assert response.status_code == 200, response.json


def _seen(reader, count):
    return [(m["json"]["entityId"], m["json"]["kind"], m["json"]["match"], m["json"]["changed"])
            for m in reader.events(count)]


def test_a_filtered_feed_sends_matching_rows_and_a_row_leaving_once(client, auth):
    other = demo_id("customer", 4)
    _put(client, auth, {"grade": "SILVER"})
    reader = Reader(_open(client, auth, "Customer", GOLD))
    _put(client, auth, {"name": "Not gold yet"})                 # not matching: nothing
    _put(client, auth, {"grade": "GOLD"})                        # enters
    _put(client, auth, {"name": "Gold now"})                     # matches
    _put(client, auth, {"grade": "BRONZE"}, customer=other)      # never matched: nothing
    _put(client, auth, {"grade": "BRONZE"})                      # leaves: once, match false
    _put(client, auth, {"name": "Bronze now"})                   # nothing any more
    _put(client, auth, {"grade": "GOLD", "name": "Back"})        # enters again
    assert _seen(reader, 4) == [
        (CUSTOMER, "UPDATE", True, ["grade"]), (CUSTOMER, "UPDATE", True, ["name"]),
        (CUSTOMER, "UPDATE", False, ["grade"]), (CUSTOMER, "UPDATE", True, ["grade", "name"])]
    reader.close()


def test_a_filter_through_a_reference_and_a_delete_judged_on_the_row_before(client, auth):
    order = demo_id("order", 2)                  # of customer 2 (GOLD)
    gold_orders = {"conditions": [
        {"property": "customer.grade", "operator": "=", "value": "GOLD"},
        {"property": "number", "operator": "startsWith", "value": "f-"}]}
    reader = Reader(_open(client, auth, "Order", gold_orders))
    _put(client, auth, {"number": "X-1"}, order, "Order")        # no
    _put(client, auth, {"number": "F-1"}, order, "Order")        # enters
    created = client.post("/rest/entities/Customer", headers=auth, json={
        "name": "Doomed", "email": "doomed@example.com", "grade": "GOLD"})
    assert created.status_code == 201, created.json
    assert client.delete(f"/rest/entities/Order/{order}", headers=auth).status_code == 204
    [(key, kind, match, _), (deleted, delete, before, _)] = _seen(reader, 2)
    assert (key, kind, match) == (order, "UPDATE", True)
    assert (deleted, delete, before) == (order, "DELETE", True)
    reader.close()
    # A delete of a row that did not match before is not sent.
    doomed = created.json["id"]
    reader = Reader(_open(client, auth, "Customer", {"conditions": [
        {"property": "name", "operator": "=", "value": "Someone else"}]}))
    assert client.delete(f"/rest/entities/Customer/{doomed}", headers=auth).status_code == 204
    _put(client, auth, {"name": "Someone else"})
    assert _seen(reader, 1) == [(CUSTOMER, "UPDATE", True, ["name"])]
    reader.close()
    reader = Reader(_open(client, auth, "Customer", {"conditions": [
        {"property": "email", "operator": "contains", "value": "OOMED@"}]}))
    restored = client.post(f"/rest/entities/Customer/{doomed}/restore", headers=auth)
    assert restored.status_code in (200, 204), restored.json
    assert client.delete(f"/rest/entities/Customer/{doomed}", headers=auth).status_code == 204
    assert [(key, kind, match) for key, kind, match, _ in _seen(reader, 2)] == [
        (doomed, "UPDATE", True), (doomed, "DELETE", True)]
    reader.close()


def test_values_of_every_kind_compare_as_the_search_compares_them(client, auth):
    order = demo_id("order", 2)
    typed = {"conditions": [
        {"property": "customer", "operator": "=", "value": demo_id("customer", 2)},
        {"property": "amount", "operator": ">", "value": 0},
        {"property": "status", "operator": "notIn", "value": ["CANCELLED"]},
        {"property": "date", "operator": ">=", "value": "2000-01-01"},
        {"property": "customer.address.country.name", "operator": "notEmpty"},
        {"property": "id", "operator": "=", "value": order}]}
    search = client.get("/rest/entities/Order/search", headers=auth,
                        query_string={"filter": json.dumps(typed)})
    assert [row["id"] for row in search.json] == [order]
    reader = Reader(_open(client, auth, "Order", typed))
    _put(client, auth, {"number": "T-1"}, demo_id("order", 3), "Order")
    _put(client, auth, {"number": "T-2"}, order, "Order")
    assert _seen(reader, 1) == [(order, "UPDATE", True, ["number"])]
    reader.close()


def test_bad_and_hidden_filters_are_refused_as_the_search_refuses_them(client, auth,
                                                                      client_with_roles):
    for spec, error in (("{not json", "Cannot parse entities filter"),
                        ({"conditions": [{"property": "nothing", "operator": "=",
                                          "value": 1}]}, "Cannot parse entities filter"),
                        ({"conditions": [{"property": "grade", "operator": ">",
                                          "value": "GOLD"}]}, "Cannot parse entities filter")):
        response = _open(client, auth, "Customer", spec)
        assert response.status_code == 400, response.get_data(as_text=True)
        assert response.json["error"] == error
    lines = _open(client, auth, "Order", {"conditions": [
        {"property": "lines.product.name", "operator": "=", "value": "x"}]})
    assert lines.status_code == 400 and "collection" in lines.json["details"]
    both = client.get("/rest/events", headers=auth, query_string=[
        ("entity", "Customer"), ("entity", "Order"), ("filter", json.dumps(GOLD))])
    assert both.status_code == 400 and "one entity" in both.json["details"]
    names_only = ResourceRole("t-customer-names", entities={"Customer": "read"},
                              attributes={"Customer": {"name": "view"}})
    c, restricted = client_with_roles(names_only, overrides=FAST)
    hidden = _open(c, restricted, "Customer", GOLD)
    search = c.get("/rest/entities/Customer/search", headers=restricted,
                   query_string={"filter": json.dumps(GOLD)})
    assert hidden.status_code == search.status_code == 400
    assert hidden.json == search.json
    assert "grade" in hidden.json["details"]


# -- webhooks ---------------------------------------------------------------------
def _register(client, auth, receiver, spec, entities=("Customer",)):
    return client.post("/rest/webhooks", headers=auth, json={
        "url": receiver.url, "entities": list(entities), "secret": "s" * 20,
        **({"filter": spec} if spec is not None else {})})


def _receiving(make_app):
    """(app, client, auth, receiver): an app that delivers to a receiver of this machine."""
    app = make_app({**QUICK, "svc.webhooks.allow-private-addresses": "true"})
    c = Client(app)
    return app, c, bearer(get_token(c)), Receiver()


def test_a_webhook_with_a_filter_gets_matching_events_and_the_leaving_one(make_app):
    app, c, auth, receiver = _receiving(make_app)
    try:
        _put(c, auth, {"grade": "SILVER"})
        response = _register(c, auth, receiver, GOLD)
        assert response.status_code == 201, response.json
        assert response.json["filter"] == GOLD
        assert c.get(f"/rest/webhooks/{response.json['id']}",
                     headers=auth).json["filter"] == GOLD
        for values in ({"name": "No"}, {"grade": "GOLD"}, {"grade": "BRONZE"}, {"name": "No"}):
            _put(c, auth, values)
        deliverer = _deliverer(app)
        for _ in range(4):
            deliverer.step()
        deliverer.close()
        sent = [json.loads(body) for _, body in receiver.received]
        assert [(event["changed"], event["match"]) for event in sent] == [
            (["grade"], True), (["grade"], False)]
    finally:
        receiver.close()


def test_a_webhook_filter_is_checked_with_the_registering_callers_permissions(
        make_app, client_with_roles):
    receiver = Receiver()
    client = Client(make_app(QUICK))
    auth = bearer(get_token(client))
    try:
        bad = _register(client, auth, receiver, {"conditions": [{"property": "grade"}]})
        assert bad.status_code == 400 and bad.json["error"] == "Cannot parse entities filter"
        two = _register(client, auth, receiver, GOLD, entities=("Customer", "Order"))
        assert two.status_code == 400 and "one entity" in two.json["details"]
        everything = ResourceRole(
            "t-webhooks", entities={"Customer": "read", "Order": "read"},
            attributes={"Customer": {"*": "view"}, "Order": {"*": "view"}},
            specifics=("rest.webhooks",))
        some_customers = RowLevelRole("t-some-customers", filters={"Customer": {"conditions": [
            {"property": "grade", "operator": "=", "value": "GOLD"}]}})
        c, restricted = client_with_roles(everything, row_level=(some_customers,),
                                          overrides={"svc.webhooks.allow-private-addresses":
                                                     "true"})
        through = _register(c, restricted, receiver, {"conditions": [
            {"property": "customer.name", "operator": "=", "value": "x"}]}, entities=("Order",))
        assert through.status_code == 403, through.json
        assert "Customer" in through.json["details"]
        hidden = ResourceRole(
            "t-hidden", entities={"Order": "read", "Customer": "read"},
            attributes={"Order": {"*": "view"}, "Customer": {"name": "view"}},
            specifics=("rest.webhooks",))
        c, restricted = client_with_roles(hidden, overrides={
            "svc.webhooks.allow-private-addresses": "true"})
        refused = _register(c, restricted, receiver, {"conditions": [
            {"property": "customer.grade", "operator": "=", "value": "GOLD"}]},
            entities=("Order",))
        assert refused.status_code == 400, refused.json
        assert refused.json["details"] == "Property for Order not found: customer.grade"
    finally:
        receiver.close()


def test_a_webhook_of_the_settings_takes_a_filter_and_a_bad_one_stops_the_start(app):
    from restsvc.events.webhooks import WebhookSubscription, as_json, sync_settings
    from restsvc.settinggroups import WebhookSettings
    from restsvc.settings import SettingsError
    hook = WebhookSettings("gold", "http://127.0.0.1:9/hook", ("Customer",),
                           ("UPDATE",), "s" * 20, json.dumps(GOLD))
    sync_settings(app.database, app.metadata, [hook], allow_private=True)
    [row] = WebhookSubscription.select()
    assert as_json(row)["filter"] == GOLD
    for text in ("{bad", json.dumps({"conditions": [{"property": "nothing",
                                                     "operator": "=", "value": 1}]})):
        try:
            sync_settings(app.database, app.metadata, [dataclasses.replace(hook, filter=text)],
                          allow_private=True)
        except SettingsError as exc:
            assert "svc.webhooks.subscription.gold" in str(exc)
        else:
            raise AssertionError(f"{text} was taken")


def test_a_subscription_far_behind_holds_no_other_up(make_app, monkeypatch):
    from restsvc.events import handout
    from restsvc.events.webhooks import WebhookDelivery
    monkeypatch.setattr(handout, "BATCH", 2)       # "far behind": more than a window
    app = make_app(QUICK)
    c = Client(app)
    auth = bearer(get_token(c))
    url = "http://127.0.0.1:9/hook"
    behind = c.post("/rest/webhooks", headers=auth, json={
        "url": url, "entities": ["Customer"], "secret": "s" * 20}).json["id"]
    for n in range(3):
        _put(c, auth, {"name": f"Old {n}"})
    current = c.post("/rest/webhooks", headers=auth, json={
        "url": url, "entities": ["Customer"], "secret": "s" * 20, "filter": GOLD}).json["id"]
    _put(c, auth, {"grade": "GOLD"})
    deliverer = _deliverer(app)
    deliverer.hand_out(0)
    deliverer.close()
    handed = {}
    for row in WebhookDelivery.select().order_by(WebhookDelivery.eventId):
        handed.setdefault(row.subscription, []).append(row.match)
    assert handed == {behind: [None, None], current: [True]}


def test_a_subscription_that_wants_none_moves_on_in_memory_and_once_written_for_good(make_app):
    from restsvc.events.webhooks import WebhookDelivery, WebhookSubscription
    app, c, auth, receiver = _receiving(make_app)
    try:
        key = _register(c, auth, receiver, GOLD).json["id"]
        first = _deliverer(app)
        first.step()                                    # where it starts is written now
        start = WebhookSubscription.get_by_id(key).after
        for name in ("A", "B", "C"):
            _put(c, auth, {"name": name})               # customer 3 is not GOLD: none wanted
        first.step()
        # Judged, in the worker's memory: its row is not written for events it did not want.
        assert WebhookSubscription.get_by_id(key).after == start
        crashed = _deliverer(app)                       # another worker judges them again: none
        crashed.step()
        assert WebhookDelivery.select().count() == 0
        first.close()                                   # a worker that stops writes where it is
        crashed.close()
        assert WebhookSubscription.get_by_id(key).after == start + 3
        _put(c, auth, {"grade": "GOLD"})
        again = _deliverer(app)
        again.step()
        again.close()
        assert [json.loads(body)["changed"] for _, body in receiver.received] == [["grade"]]
    finally:
        receiver.close()


def test_a_running_worker_takes_new_subscriptions_and_drops_removed_ones_at_its_next_pass(
        make_app):
    app, c, auth, receiver = _receiving(make_app)
    try:
        worker = _deliverer(app)
        worker.step()                                   # knows no subscription yet
        grades = {"conditions": [{"property": "grade", "operator": "in",
                                  "value": ["GOLD", "SILVER"]}]}
        _put(c, auth, {"grade": "BRONZE"})
        assert _register(c, auth, receiver, grades).status_code == 201
        removed = _register(c, auth, receiver, GOLD).json["id"]
        _put(c, auth, {"grade": "GOLD"})                # both: it enters each filter
        worker.step()
        assert c.delete(f"/rest/webhooks/{removed}", headers=auth).status_code == 204
        _put(c, auth, {"grade": "SILVER"})              # kept: still in; removed: gone
        _put(c, auth, {"grade": "BRONZE"})              # kept: leaves, once
        _put(c, auth, {"name": "Bronze still"})         # none
        for _ in range(3):
            worker.step()
        worker.close()
        sent = sorted((json.loads(body)["id"], json.loads(body)["match"])
                      for _, body in receiver.received)
        gold, silver, bronze = sorted({event for event, _ in sent})
        assert sent == [(gold, True), (gold, True), (silver, True), (bronze, False)]
    finally:
        receiver.close()


def test_filters_found_by_value_or_range_are_those_trying_every_filter_finds(app, client, auth):
    """hub.fan_out and the hand-out find a filter with an ``=``/``in`` or a
    comparison by the row's value (byvalue.py): the same verdicts as trying
    every filter on every event, at and around each comparison's constant."""
    from restsvc.data.access import access_for
    from restsvc.events import outbox
    from restsvc.events.byvalue import ByValue
    from restsvc.events.hub import Subscriber, fan_out
    from restsvc.events.matching import Verdicts, compiled
    meta = app.metadata.entity("Customer")
    access = access_for(app, app.gate.principal("/rest/events", auth["Authorization"]))
    start = outbox.position(app.database)
    days = ["1979-12-31", "1980-01-01", "1980-01-02", "1980-01-01", "1979-12-31", None,
            "1990-05-05", "1980-01-01"]
    for day, name in zip(days, ["Ann", "Bob", "anna", "Bo", "Ann", "b", "", "Annie"]):
        _put(client, auth, {"birthDate": day, "grade": "GOLD" if day else "SILVER", "name": name})
    outbox.assign(app.database)
    events = outbox.read(app.database, start, ["Customer"], 100)
    specs = [[{"property": "birthDate", "operator": op, "value": "1980-01-01"}] + extra
             for op in (">", ">=", "<", "<=")
             for extra in ([], [{"property": "grade", "operator": "<>", "value": "BRONZE"}])]
    specs.append([{"property": "grade", "operator": "in", "value": ["GOLD", "BRONZE"]}])
    specs += [[{"property": "name", "operator": "startsWith", "value": text}]
              for text in ("an", "ANN", "b", "bob", "")]
    specs.append([{"group": "OR", "conditions": [
        {"property": "name", "operator": "startsWith", "value": "bo"},
        {"group": "AND", "conditions": [
            {"property": "name", "operator": "contains", "value": "n"},
            {"property": "birthDate", "operator": "<", "value": "1985-01-01"}]},
        {"property": "grade", "operator": "=", "value": "SILVER"}]}])
    matchers = [compiled(meta, {"conditions": spec}, access.permissions) for spec in specs]
    assert all(matcher.found_by for matcher in matchers)
    index: ByValue[int] = ByValue()
    for number, matcher in enumerate(matchers):
        assert index.add(matcher, number)
    verdicts = Verdicts(access, events, matchers)
    for event in events:
        tried = {number for number, matcher in enumerate(matchers)
                 if verdicts.verdict(matcher, event) is not None}
        found = set(index.found(event, verdicts))
        assert tried <= found, (event, tried, found)
        assert {number for number in found
                if verdicts.verdict(matchers[number], event) is not None} == tried
    passing = [sum(verdicts.verdict(matcher, event) is not None for event in events)
               for matcher in matchers]
    assert all(passing) and passing[0] < passing[2] and passing[4] < passing[6], passing
    for chosen in ([0], [2, 5], list(range(len(matchers)))):   # the hub's fan-out: the same
        streams = [Subscriber(access, [meta], matchers[number], start, lambda: True, 1 << 40,
                              lambda: None) for number in chosen]
        fan_out(events, streams)
        assert [stream.take()[0].count(b"\n\n") for stream in streams] == [
            passing[number] for number in chosen]
