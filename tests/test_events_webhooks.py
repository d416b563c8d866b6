"""Webhooks: registration under the grant, signed deliveries, retries with
backoff, dead letters and their replay (restsvc/events/webhooks.py, delivery.py)."""
import json
import re
import threading
import time
from contextlib import contextmanager

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from restsvc.events.delivery import Deliverer, WebhookDelivery
from restsvc.events import webhooks
from restsvc.events.webhooks import WebhookSubscription, sync_settings
from webhook_support import Receiver, Trickler, verify

CUSTOMER = demo_id("customer", 3)
SECRET = "a-webhook-secret-of-some-length"
QUICK = {"svc.webhooks.allow-private-addresses": True,
         "svc.webhooks.retry-initial-delay": "20ms", "svc.webhooks.timeout": "5s"}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def _register(client, auth, url, **extra):
    body = {"url": url, "entities": ["Customer"], "kinds": ["UPDATE"], "secret": SECRET, **extra}
    return client.post("/rest/webhooks", headers=auth, json=body)


def _rename(client, auth, name):
    response = client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth,
                          json={"name": name})
    assert response.status_code == 200, response.json


def test_registration_needs_the_grant_and_never_answers_the_secret(make_app, receiver):
    app = make_app(QUICK)
    c = Client(app)
    auth = bearer(get_token(c))
    reader = bearer(get_token(c, "reader", "reader-secret"))
    assert _register(c, reader, receiver.url).status_code == 403
    created = _register(c, auth, receiver.url)
    assert created.status_code == 201, created.json
    hook = created.json
    assert set(hook) == {"id", "url", "entities", "kinds", "createdDate", "fromSettings"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", hook["createdDate"])
    assert created.headers["Location"].endswith(f"/rest/webhooks/{hook['id']}")
    for answer in (c.get("/rest/webhooks", headers=auth),
                   c.get(f"/rest/webhooks/{hook['id']}", headers=auth)):
        assert answer.status_code == 200 and SECRET not in answer.get_data(as_text=True)
    assert c.get("/rest/webhooks", headers=reader).status_code == 403
    assert c.delete(f"/rest/webhooks/{hook['id']}", headers=auth).status_code == 204
    assert c.get(f"/rest/webhooks/{hook['id']}", headers=auth).status_code == 404


@pytest.mark.parametrize("change, message", [
    ({"url": "ftp://93.184.216.34/x"}, "only http"),
    ({"entities": ["Product"]}, "publishes events"),
    ({"entities": ["Nothing"]}, "publishes events"),
    ({"kinds": ["RESTORE"]}, "kinds"),
    ({"secret": "short"}, "secret"),
    ({"url": "http://no-such-host.invalid/x"}, "does not resolve"),
    ({"url": "https://user:pass@93.184.216.34/x"}, "no user name or password"),
    ({"url": "https://93.184.216.34:99999/x"}, "not a valid URL"),
    ({"url": "https://exa mple.com/x"}, "not a valid host name"),
    ({"url": "https://[::1/x"}, "not a valid URL"),
    ({"url": "https://93.184.216.34/" + "é" * 700}, "at most 2048"),
])
def test_bad_registrations_are_400(app, client, auth, change, message):
    body = {"url": "https://93.184.216.34/hook", "entities": ["Customer"], "secret": SECRET,
            **change}
    response = client.post("/rest/webhooks", headers=auth, json=body)
    assert response.status_code == 400 and message in response.json["details"], response.json


def test_private_addresses_are_refused_unless_allowed(client, auth, receiver):
    for url in (receiver.url, "http://10.1.2.3/x", "http://169.254.169.254/latest",
                "http://[::1]:8080/x"):
        response = _register(client, auth, url)
        assert response.status_code == 400, (url, response.json)
        assert "private" in response.json["details"]


def _deliverer(app):
    return Deliverer(app.settings, app.database, app.metadata)


def test_a_receiver_that_fails_three_times_gets_four_signed_deliveries_of_one_event(
        make_app):
    app = make_app(QUICK)
    c = Client(app)
    auth = bearer(get_token(c))
    receiver = Receiver(answers=[500, 503, 404])
    try:
        assert _register(c, auth, receiver.url).status_code == 201
        _rename(c, auth, "Hooked")
        deliverer = _deliverer(app)
        receiver.wait_for(4, step=deliverer.step)
        for _ in range(20):
            deliverer.step()
        assert len(receiver.received) == 4
        ids = set(receiver.ids())
        assert len(ids) == 1
        bodies = {body for _, body in receiver.received}
        assert len(bodies) == 1
        event = json.loads(bodies.pop())
        assert str(event["id"]) == ids.pop()
        assert (event["entity"], event["entityId"], event["kind"]) == ("Customer", CUSTOMER,
                                                                      "UPDATE")
        for headers, body in receiver.received:
            assert verify(SECRET, headers["Svc-Signature"], body)
            assert not verify("another-secret-entirely", headers["Svc-Signature"], body)
            assert headers["Content-Type"] == "application/json"
        assert WebhookDelivery.select().count() == 0
    finally:
        receiver.close()


def test_kinds_and_entities_choose_the_events(make_app, receiver):
    app = make_app(QUICK)
    c = Client(app)
    auth = bearer(get_token(c))
    assert _register(c, auth, receiver.url, kinds=["DELETE"]).status_code == 201
    _rename(c, auth, "Not a delete")
    assert c.put(f"/rest/entities/Order/{demo_id('order', 2)}", headers=auth,
                 json={"number": "Not a customer"}).status_code == 200
    deliverer = _deliverer(app)
    for _ in range(5):
        deliverer.step()
    assert receiver.received == []


def test_a_delivery_failing_for_the_whole_retry_period_is_a_dead_letter_and_replays(
        make_app):
    app = make_app({**QUICK, "svc.webhooks.retry-period": "1s"})
    c = Client(app)
    auth = bearer(get_token(c))
    receiver = Receiver(answers=[500] * 1000)
    try:
        hook = _register(c, auth, receiver.url).json
        _rename(c, auth, "Dead")
        deliverer = _deliverer(app)
        path = f"/rest/webhooks/{hook['id']}/dead-letters"
        while not c.get(path, headers=auth).json:
            deliverer.step()
        [dead] = c.get(path, headers=auth).json
        assert dead["lastStatus"] == 500 and dead["attempts"] == len(receiver.received)
        assert dead["event"]["id"] == dead["eventId"]
        tried = len(receiver.received)
        receiver.answers.clear()
        replayed = c.post(f"{path}/replay", headers=auth)
        assert replayed.status_code == 200 and replayed.json == {"replayed": 1}
        receiver.wait_for(tried + 1, step=deliverer.step)
        assert c.get(path, headers=auth).json == []
        assert set(receiver.ids()) == {str(dead["eventId"])}
    finally:
        receiver.close()


def test_subscriptions_of_the_settings_are_listed_and_not_deleted_by_the_api(make_app,
                                                                             receiver):
    prefix = "svc.webhooks.subscription.orders."
    app = make_app({**QUICK, f"{prefix}url": receiver.url, f"{prefix}entities": "Order",
                    f"{prefix}secret": SECRET})
    sync_settings(app.database, app.metadata, app.settings.webhooks, True)
    c = Client(app)
    auth = bearer(get_token(c))
    [hook] = c.get("/rest/webhooks", headers=auth).json
    assert hook["id"] == "settings:orders" and hook["fromSettings"]
    assert hook["kinds"] == ["CREATE", "UPDATE", "DELETE"]
    assert c.delete("/rest/webhooks/settings:orders", headers=auth).status_code == 409


def _readme_receiver(secret):
    """The README's ten-line receiver, run as written (on a free port)."""
    import re
    import threading
    from http.server import HTTPServer
    from pathlib import Path
    text = (Path(__file__).resolve().parent.parent / "restsvc/docs/events.md").read_text()
    code = re.search(r"\*\*A receiver in ten lines of Python\*\*.*?```python\n(.*?)```", text,
                     re.S).group(1)
    lines = code.strip().split("\n")
    assert len(lines) <= 12 and lines[-1].startswith("HTTPServer(")
    namespace = {}
    exec("\n".join(lines[:-1]), namespace)          # all but serve_forever on port 8080
    namespace["SECRET"] = secret.encode()
    server = HTTPServer(("127.0.0.1", 0), namespace["Hook"])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("receiver_secret, accepted", [(SECRET, True),
                                                       ("not-the-subscription-secret", False)])
def test_the_readme_receiver_verifies_the_signature(make_app, receiver_secret, accepted):
    app = make_app({**QUICK, "svc.webhooks.retry-initial-delay": "1h"})
    c = Client(app)
    auth = bearer(get_token(c))
    server = _readme_receiver(receiver_secret)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        assert _register(c, auth, url).status_code == 201
        _rename(c, auth, "Verified")
        _deliverer(app).step()
        left = list(WebhookDelivery.select())
        if accepted:
            assert left == []                       # answered 204: delivered
        else:
            assert [(row.lastStatus, row.attempts) for row in left] == [(400, 1)]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _running(app):
    """The delivery worker's loop on a thread, as ``restsvc deliver`` runs it."""
    stop = threading.Event()
    worker = threading.Thread(target=Deliverer(app.settings, app.database, app.metadata).run, args=(stop,),
                              daemon=True)
    worker.start()
    try:
        yield worker
    finally:
        stop.set()
        worker.join(30)


def _hooked_app(make_app, **settings):
    app = make_app({**QUICK, "svc.webhooks.timeout": "1s", "svc.events.poll-interval": "20ms",
                    **settings})
    c = Client(app)
    return app, c, bearer(get_token(c))


def test_a_slow_receiver_holds_up_no_other_subscription(make_app, receiver):
    app, c, auth = _hooked_app(make_app)
    slow = Trickler()
    try:
        slow_hook = _register(c, auth, slow.url).json        # its deliveries come first
        assert _register(c, auth, receiver.url).status_code == 201
        for n in range(3):
            _rename(c, auth, f"Busy {n}")
        started = time.monotonic()
        with _running(app):
            receiver.wait_for(3, seconds=30)
            assert time.monotonic() - started < 4, "the fast receiver waited for the slow one"
        [first] = (WebhookDelivery.select().where(WebhookDelivery.subscription == slow_hook["id"])
                   .order_by(WebhookDelivery.eventId).limit(1))
        assert first.attempts >= 1 and first.lastError.startswith("TimeoutError"), first.lastError
    finally:
        slow.close()


def test_the_timeout_bounds_a_whole_attempt_not_each_read(make_app):
    app, c, auth = _hooked_app(make_app)
    slow = Trickler(interval=0.1)
    try:
        assert _register(c, auth, slow.url).status_code == 201
        _rename(c, auth, "Slow")
        started = time.monotonic()
        _deliverer(app).step()          # returns when the attempt has ended
        assert time.monotonic() - started < 2.5
        [row] = WebhookDelivery.select()
        assert (row.attempts, row.lastStatus) == (1, None)
        assert row.lastError.startswith("TimeoutError")
    finally:
        slow.close()


def test_a_url_with_a_non_ascii_path_is_stored_percent_encoded_and_delivered(make_app,
                                                                              receiver):
    app, c, auth = _hooked_app(make_app)
    base = receiver.url.split("/hook")[0]
    created = _register(c, auth, f"{base}/caf\u00e9 au lait?city=Z\u00fcrich#part")
    assert created.status_code == 201, created.json
    assert created.json["url"] == f"{base}/caf%C3%A9%20au%20lait?city=Z%C3%BCrich"
    _rename(c, auth, "Accented")
    _deliverer(app).step()
    assert receiver.paths == ["/caf%C3%A9%20au%20lait?city=Z%C3%BCrich"]
    assert WebhookDelivery.select().count() == 0


def test_a_stored_url_with_a_non_ascii_path_is_still_delivered(make_app, receiver):
    """A subscription registered before URLs were normalised."""
    app, c, auth = _hooked_app(make_app)
    hook = _register(c, auth, receiver.url).json
    base = receiver.url.split("/hook")[0]
    WebhookSubscription.update(url=f"{base}/caf\u00e9").where(
        WebhookSubscription.id == hook["id"]).execute()
    _rename(c, auth, "Old registration")
    _deliverer(app).step()
    assert receiver.paths == ["/caf%C3%A9"]


def test_an_error_inside_one_delivery_is_its_failure_and_the_worker_goes_on(
        make_app, receiver, monkeypatch):
    app, c, auth = _hooked_app(make_app, **{"svc.webhooks.retry-period": "1s"})
    broken_secret = "a-secret-that-breaks-the-signing"
    original = webhooks.signature

    def signature(secret, body, timestamp):
        if secret == broken_secret:
            raise RuntimeError("signing broke")
        return original(secret, body, timestamp)
    monkeypatch.setattr(webhooks, "signature", signature)
    broken = _register(c, auth, receiver.url, secret=broken_secret).json
    assert _register(c, auth, receiver.url).status_code == 201
    with _running(app) as worker:
        _rename(c, auth, "First")
        receiver.wait_for(1)
        path = f"/rest/webhooks/{broken['id']}/dead-letters"
        deadline = time.monotonic() + 20
        while not c.get(path, headers=auth).json:
            assert time.monotonic() < deadline and worker.is_alive()
            time.sleep(0.05)
        _rename(c, auth, "Second")
        receiver.wait_for(2)
        assert worker.is_alive()
    [dead] = c.get(path, headers=auth).json
    assert dead["attempts"] > 1 and dead["lastError"] == "RuntimeError: signing broke"


def test_a_subscription_row_that_cannot_be_read_stops_no_other(make_app, receiver):
    app, c, auth = _hooked_app(make_app)
    bad = _register(c, auth, receiver.url).json
    assert _register(c, auth, receiver.url).status_code == 201
    WebhookSubscription.update(entities="not json").where(
        WebhookSubscription.id == bad["id"]).execute()
    _rename(c, auth, "Still delivered")
    with _running(app) as worker:
        receiver.wait_for(1)
        time.sleep(0.2)
        assert worker.is_alive()
    assert len(receiver.received) == 1


def test_a_fast_receiver_gets_a_burst_in_order_a_batch_per_pass(make_app):
    from restsvc.events.delivery import PER_SUBSCRIPTION
    app = make_app(QUICK)
    c = Client(app)
    auth = bearer(get_token(c))
    receiver = Receiver()
    try:
        assert _register(c, auth, receiver.url).status_code == 201
        count = PER_SUBSCRIPTION + 20
        for n in range(count):
            _rename(c, auth, f"Burst {n}")
        deliverer = _deliverer(app)
        deliverer.step()                # one batch: the oldest PER_SUBSCRIPTION, in order
        assert len(receiver.received) == PER_SUBSCRIPTION
        assert WebhookDelivery.select().count() == 20
        deliverer.step()
        deliverer.close()
        ids = [int(json.loads(body)["id"]) for _, body in receiver.received]
        assert len(ids) == count and ids == sorted(ids)
        assert WebhookDelivery.select().count() == 0
    finally:
        receiver.close()


def test_a_batch_stops_at_its_first_failure_and_gives_the_rest_back_unattempted(make_app):
    app = make_app({**QUICK, "svc.webhooks.retry-initial-delay": "1h"})
    c = Client(app)
    auth = bearer(get_token(c))
    receiver = Receiver(answers=[200, 500])
    try:
        assert _register(c, auth, receiver.url).status_code == 201
        for n in range(5):
            _rename(c, auth, f"Batch {n}")
        deliverer = _deliverer(app)
        deliverer.step()
        assert len(receiver.received) == 2          # the first delivered, the second failed
        rows = list(WebhookDelivery.select().order_by(WebhookDelivery.seq))
        assert [(row.attempts, row.leaseUntil is None) for row in rows] == [
            (1, True), (0, True), (0, True), (0, True)]
        assert rows[0].lastStatus == 500 and rows[0].nextAttempt > time.time() + 1000
        deliverer.step()                             # the three after it, not the one retried later
        deliverer.close()
        assert len(receiver.received) == 5
        assert [row.seq for row in WebhookDelivery.select()] == [rows[0].seq]
    finally:
        receiver.close()
