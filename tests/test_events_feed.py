"""The change feed: GET /rest/events (Server-Sent Events), through werkzeug's
Client, reading the stream chunk by chunk (restsvc/events/feed.py)."""
import json
import threading

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from restsvc import ResourceRole, RowLevelRole
from restsvc.events import feed, outbox
from restsvc.events.outbox import ChangeEvent
from restsvc.settings import SettingsError

CUSTOMER = demo_id("customer", 3)
ORDER = demo_id("order", 2)             # customer 2 is GOLD
HIDDEN_ORDER = demo_id("order", 0)      # customer 0 is BRONZE
FAST = {"svc.events.poll-interval": "20ms"}
FIELDS = {"id", "entity", "entityId", "kind", "changed", "version", "username", "time"}


@pytest.fixture
def app(make_app):
    return make_app(FAST)


class Reader:
    """An open stream: its messages, read as they come."""

    def __init__(self, response):
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.mimetype == "text/event-stream"
        self.response = response
        self.chunks = iter(response.response)
        self.pending = []
        self.ended = False

    def next(self):
        """The next message: a dict of its fields (a comment as {"comment": ...})."""
        while not self.pending:
            try:
                chunk = next(self.chunks)
            except StopIteration:
                self.ended = True
                return None
            for block in chunk.decode().split("\n\n"):
                if block:
                    self.pending.append(_parse(block))
        return self.pending.pop(0)

    def events(self, count):
        """The next ``count`` data messages (retry lines and comments skipped)."""
        found = []
        while len(found) < count:
            message = self.next()
            assert message is not None, f"the stream ended after {found}"
            if "data" in message:
                found.append(message)
        return found

    def close(self):
        self.response.close()


def _parse(block):
    message = {}
    for line in block.split("\n"):
        if line.startswith(":"):
            message["comment"] = line[1:].strip()
        else:
            name, _, value = line.partition(": ")
            message[name] = value
    if "data" in message:
        message["json"] = json.loads(message["data"])
    return message


def _open(client, auth, *entities, **headers):
    query = [("entity", name) for name in entities]
    return Reader(client.get("/rest/events", query_string=query, headers={**auth, **headers},
                             buffered=False))


def _rename(client, auth, name, customer=CUSTOMER):
    response = client.put(f"/rest/entities/Customer/{customer}", headers=auth,
                          json={"name": name})
    assert response.status_code == 200, response.json


def test_a_stream_starts_now_and_sends_each_event_with_its_id(client, auth):
    _rename(client, auth, "Before")
    reader = _open(client, auth, "Customer")
    assert reader.next() == {"retry": "2000"}
    _rename(client, auth, "After")
    [message] = reader.events(1)
    event = message["json"]
    assert set(event) == FIELDS
    assert message["id"] == str(event["id"])
    assert (event["entity"], event["entityId"], event["kind"], event["changed"]) == (
        "Customer", CUSTOMER, "UPDATE", ["name"])
    assert event["username"] == "demo-client"
    reader.close()


def test_last_event_id_resumes_after_it_in_order_and_once(app, client, auth):
    start = outbox.position(app.database)
    for n in range(5):
        _rename(client, auth, f"N{n}")
    reader = _open(client, auth, "Customer", **{"Last-Event-ID": str(start + 2)})
    messages = reader.events(3)
    assert [int(m["id"]) for m in messages] == [start + 3, start + 4, start + 5]
    _rename(client, auth, "Later")
    assert [int(m["id"]) for m in reader.events(1)] == [start + 6]
    reader.close()
    # The parameter form (a new EventSource opened with a ticket cannot send the header).
    query = [("entity", "Customer"), ("lastEventId", str(start + 5))]
    again = Reader(client.get("/rest/events", query_string=query, headers=auth, buffered=False))
    assert [int(m["id"]) for m in again.events(1)] == [start + 6]
    again.close()


def test_an_id_older_than_what_is_kept_gets_a_reset(app, client, auth):
    start = outbox.position(app.database)
    for n in range(3):
        _rename(client, auth, f"N{n}")
    outbox.assign(app.database)
    ChangeEvent.update(time="2000-01-01 00:00:00").execute()
    assert outbox.prune(app.database, 60) == 2
    reader = _open(client, auth, "Customer", **{"Last-Event-ID": str(start)})
    [reset] = reader.events(1)
    assert reset["event"] == "reset" and reset["id"] == str(start + 3)
    _rename(client, auth, "After reset")
    assert [int(m["id"]) for m in reader.events(1)] == [start + 4]
    reader.close()
    # The newest kept id itself resumes without a reset.
    reader = _open(client, auth, "Customer", **{"Last-Event-ID": str(start + 3)})
    assert [int(m["id"]) for m in reader.events(1)] == [start + 4]
    reader.close()


def test_only_the_entities_asked_for_are_sent(app, client, auth):
    reader = _open(client, auth, "Order")
    _rename(client, auth, "Not an order")
    assert client.put(f"/rest/entities/Order/{ORDER}", headers=auth,
                      json={"number": "F-1"}).status_code == 200
    [message] = reader.events(1)
    assert message["json"]["entity"] == "Order" and message["json"]["entityId"] == ORDER
    reader.close()


def test_bad_requests_are_answered_before_the_stream(client, auth):
    for query, status in ((["Nothing"], 404), (["Product"], 400)):
        response = client.get("/rest/events", query_string=[("entity", q) for q in query],
                              headers=auth)
        assert response.status_code == status, response.json
    response = client.get("/rest/events", headers={**auth, "Last-Event-ID": "abc"})
    assert response.status_code == 400 and response.json["error"] == "Invalid parameter value"
    assert client.get("/rest/events").status_code == 401


def test_an_entity_the_caller_may_not_read_is_403_and_hidden_attributes_are_left_out(
        client_with_roles):
    names_only = ResourceRole("t-customer-names", entities={"Customer": "read"},
                              attributes={"Customer": {"name": "view"}})
    c, restricted = client_with_roles(names_only, overrides=FAST)
    response = c.get("/rest/events", query_string={"entity": "Order"}, headers=restricted)
    assert response.status_code == 403, response.json
    reader = _open(c, restricted)          # no entity named: those it may read
    full = bearer(get_token(c))
    assert c.put(f"/rest/entities/Order/{ORDER}", headers=full,
                 json={"number": "Unseen"}).status_code == 200
    assert c.put(f"/rest/entities/Customer/{CUSTOMER}", headers=full,
                 json={"name": "Seen", "email": "secret@example.com"}).status_code == 200
    [message] = reader.events(1)
    assert message["json"]["entity"] == "Customer"
    assert message["json"]["changed"] == ["name"]
    reader.close()


def test_a_caller_that_may_read_no_entity_with_events_is_403(client_with_roles):
    products = ResourceRole("t-products", entities={"Product": "read"},
                            attributes={"Product": {"*": "view"}})
    c, restricted = client_with_roles(products, overrides=FAST)
    response = c.get("/rest/events", headers=restricted)
    assert response.status_code == 403 and response.json["error"] == "Reading forbidden"


def test_row_level_rules_decide_per_event(client_with_roles):
    gold = RowLevelRole("t-gold-orders", filters={"Order": {"conditions": [
        {"property": "customer.grade", "operator": "=", "value": "GOLD"}]}})
    reads_orders = ResourceRole("t-orders", entities={"Order": "read"},
                                attributes={"Order": {"*": "view"}})
    c, restricted = client_with_roles(reads_orders, row_level=(gold,), overrides=FAST)
    full = bearer(get_token(c))
    # Opened after the writes, from the id before them: the process's reader
    # judges them all at once, with the rows as they are then (a stream open
    # meanwhile may read some while the order is out of scope).
    before = outbox.position(c.application.database)
    for order in (HIDDEN_ORDER, ORDER, HIDDEN_ORDER):
        assert c.put(f"/rest/entities/Order/{order}", headers=full,
                     json={"number": f"R-{order[:4]}"}).status_code == 200
    # The order moves out of the reader's scope, then changes again.
    assert c.put(f"/rest/entities/Customer/{demo_id('customer', 2)}", headers=full,
                 json={"grade": "BRONZE"}).status_code == 200
    assert c.put(f"/rest/entities/Order/{ORDER}", headers=full,
                 json={"number": "Out of scope"}).status_code == 200
    assert c.put(f"/rest/entities/Customer/{demo_id('customer', 2)}", headers=full,
                 json={"grade": "GOLD"}).status_code == 200
    assert c.put(f"/rest/entities/Order/{ORDER}", headers=full,
                 json={"number": "Back"}).status_code == 200
    reader = _open(c, restricted, "Order", **{"Last-Event-ID": str(before)})
    messages = reader.events(2)
    assert [m["json"]["entityId"] for m in messages] == [ORDER, ORDER]
    # The order's changes (read while it is back in scope, the one made while
    # it was out is shown too: rows are judged as they are when read), never
    # the hidden order's.
    assert HIDDEN_ORDER not in {m["json"]["entityId"] for m in messages}
    reader.close()


def test_the_stream_ends_when_its_token_is_revoked(client):
    token = get_token(client)
    reader = _open(client, bearer(token), "Customer")
    reader.next()
    response = client.post("/oauth2/revoke", data={"token": token},
                           headers={"Authorization": _basic()})
    assert response.status_code == 200
    while True:
        message = reader.next()
        assert message is not None, "the stream ended without saying why"
        if message.get("event") == "end":
            break
    assert reader.next() is None and reader.ended


def _basic():
    from conftest import basic
    return basic("demo-client", "demo-secret")


def test_a_worker_that_stops_ends_its_streams(client, auth):
    reader = _open(client, auth, "Customer")
    reader.next()
    feed.close_streams()
    try:
        while reader.next() is not None:
            pass
    finally:
        feed._close_requested = False
    assert reader.ended


def test_closing_the_streams_takes_no_lock_a_second_sigterm_could_find_held():
    """close_streams runs in a SIGTERM handler; another SIGTERM can interrupt
    it anywhere, and that handler must not wait for the first one's lock."""
    def interrupted_handler():
        with feed._closing._cond:         # the first handler, interrupted inside set()
            feed.close_streams()          # the second one
    runner = threading.Thread(target=interrupted_handler, daemon=True)
    try:
        runner.start()
        runner.join(2)
        assert not runner.is_alive(), "close_streams waited for a lock its caller held"
    finally:
        feed._close_requested = False
        if not runner.is_alive():       # else its lock stays held: leave the Event alone
            feed._closing.clear()


def test_an_idle_stream_sends_a_keepalive_comment(make_app):
    app = make_app({**FAST, "svc.events.keepalive": "1s"})
    c = Client(app)
    reader = _open(c, bearer(get_token(c)), "Customer")
    assert reader.next() == {"retry": "2000"}
    assert reader.next() == {"comment": "keepalive"}
    reader.close()


def test_streams_beyond_the_cap_are_503_with_retry_after_and_open_ones_are_counted(make_app):
    app = make_app({**FAST, "svc.events.max-streams-per-worker": 2,
                    "svc.events.max-stream-share-per-caller": "100%",
                    "svc.metrics.path": "/metrics"})
    c = Client(app)
    auth = bearer(get_token(c))
    readers = [_open(c, auth, "Customer") for _ in range(2)]
    assert app.instruments.event_streams.series[()] == 2
    response = c.get("/rest/events", headers=auth)
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    readers[0].close()
    third = _open(c, auth, "Customer")           # a closed stream frees its place
    third.close()
    readers[1].close()
    assert app.event_streams.open == 0 and app.instruments.event_streams.series[()] == 0


def test_one_caller_holds_at_most_half_of_the_streams_and_others_still_get_theirs(make_app):
    app = make_app({**FAST, "svc.events.max-streams-per-worker": 4})
    c = Client(app)
    greedy = bearer(get_token(c))
    other_token_same_caller = bearer(get_token(c))
    readers = [_open(c, greedy, "Customer") for _ in range(2)]
    for auth in (greedy, other_token_same_caller):
        response = c.get("/rest/events", headers=auth)
        assert response.status_code == 429 and response.headers["Retry-After"] == "5"
        assert "as many as one caller may" in response.json["details"]
    other = bearer(get_token(c, "reader", "reader-secret"))
    others = [_open(c, other, "Customer") for _ in range(2)]
    readers[0].close()
    readers[0] = _open(c, greedy, "Customer")   # a closed stream gives the caller its place back
    for reader in readers + others:
        reader.close()
    assert app.event_streams.open == 0


def test_the_share_of_one_caller_is_a_setting(make_app):
    app = make_app({**FAST, "svc.events.max-streams-per-worker": 3,
                    "svc.events.max-stream-share-per-caller": "0.34"})
    c = Client(app)
    auth = bearer(get_token(c))
    reader = _open(c, auth, "Customer")
    assert c.get("/rest/events", headers=auth).status_code == 429
    reader.close()


@pytest.mark.parametrize("share", ["0", "0%", "101%", "1.5", "half"])
def test_a_share_outside_0_to_100_percent_stops_startup(make_app, share):
    with pytest.raises(SettingsError, match=r"max-stream-share-per-caller: invalid value .*(share|more than 0)"):
        make_app({"svc.events.max-stream-share-per-caller": share})


def test_a_stream_that_fails_to_open_gives_its_place_back(make_app, monkeypatch):
    app = make_app({**FAST, "svc.events.max-streams-per-worker": 1})
    c = Client(app)
    auth = bearer(get_token(c))

    def broken(database):
        raise RuntimeError("the outbox is unreadable")
    monkeypatch.setattr(outbox, "position", broken)
    assert c.get("/rest/events", headers=auth).status_code == 500
    monkeypatch.undo()
    assert app.event_streams.open == 0
    _open(c, auth, "Customer").close()


def test_a_browser_opens_the_stream_with_a_ticket(app, client, auth):
    response = client.post("/rest/events/tickets", headers=auth)
    assert response.status_code == 200, response.json
    ticket = response.json["ticket"]
    assert response.json["expiresIn"] == 60 and auth["Authorization"][7:] not in ticket
    reader = Reader(client.get("/rest/events/stream", buffered=False,
                               query_string={"ticket": ticket, "entity": "Customer"}))
    _rename(client, auth, "Via ticket")
    [message] = reader.events(1)
    assert message["json"]["entityId"] == CUSTOMER
    reader.close()
    for bad in ("", ticket[:-2] + "xx"):
        response = client.get("/rest/events/stream", query_string={"ticket": bad})
        assert response.status_code == 401, response.json
    assert client.post("/rest/events/tickets").status_code == 401
