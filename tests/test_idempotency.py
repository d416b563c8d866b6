"""Idempotency-Key on POST and PUT: replay, 422 for another request, 409 while running."""
import json
import time

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant
from jwt_support import hs256_headers, hs256_settings
from restsvc import ResourceRole
from restsvc.data.answer.etags import permissions_key
from restsvc.idempotency import IdempotentRequest, caller_of, fingerprint, sight

FULL = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
CUSTOMERS = "/rest/entities/Customer"


def _count(client, auth):
    return client.get(f"{CUSTOMERS}/search/count?filter={{}}", headers=auth).json


def _create(client, auth, key, body=None):
    return client.post(CUSTOMERS, json=body or {"name": "Once Only", "email": "once@x.org"},
                       headers={**auth, "Idempotency-Key": key})


def test_a_repeated_create_is_replayed_without_running_again(client, auth):
    before = _count(client, auth)
    first = _create(client, auth, "order-1")
    again = _create(client, auth, "order-1")
    assert first.status_code == again.status_code == 201
    assert again.json == first.json
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert _count(client, auth) == before + 1


def test_without_a_key_each_create_runs(client, auth):
    before = _count(client, auth)
    for _ in range(2):
        client.post(CUSTOMERS, json={"name": "Twice", "email": "t@x.org"}, headers=auth)
    assert _count(client, auth) == before + 2


def test_a_bulk_create_is_replayed(client, auth):
    body = [{"name": "Bulk A", "email": "a@x.org"}, {"name": "Bulk B", "email": "b@x.org"}]
    before = _count(client, auth)
    first = _create(client, auth, "bulk-1", body)
    again = _create(client, auth, "bulk-1", body)
    assert first.status_code == again.status_code == 201 and again.json == first.json
    assert _count(client, auth) == before + 2


def test_the_same_key_with_another_body_is_422(client, auth):
    assert _create(client, auth, "k").status_code == 201
    response = _create(client, auth, "k", {"name": "Other", "email": "o@x.org"})
    assert response.status_code == 422
    assert response.json["error"] == "Idempotency-Key reused"


def test_the_same_key_on_another_path_is_422(client, auth):
    assert _create(client, auth, "k").status_code == 201
    response = client.post("/rest/entities/Product", json={"name": "Once Only", "email": "once@x.org"},
                           headers={**auth, "Idempotency-Key": "k"})
    assert response.status_code == 422


def test_a_repeat_while_the_first_still_runs_is_409(app, client, auth):
    body = json.dumps({"name": "Slow", "email": "s@x.org"}).encode()
    principal = app.gate.principal(CUSTOMERS, auth["Authorization"])
    # What the first request, still running on some instance, has claimed.
    seen = sight(permissions_key(principal.permissions, {}))
    app.replays.claim(caller_of(principal), "slow", fingerprint("POST", CUSTOMERS, b"", body), seen)
    before = _count(client, auth)
    response = client.post(CUSTOMERS, data=body, content_type="application/json",
                           headers={**auth, "Idempotency-Key": "slow"})
    assert response.status_code == 409
    assert response.json["error"] == "Idempotency-Key in use"
    assert _count(client, auth) == before


def test_keys_are_per_caller(client_with_roles):
    client, tester = client_with_roles(FULL)
    demo = {"Authorization": f"Bearer {get_token(client)}"}
    before = _count(client, demo)
    first = _create(client, tester, "shared")
    other = _create(client, demo, "shared")
    assert first.status_code == other.status_code == 201
    assert "Idempotent-Replayed" not in other.headers
    assert other.json["id"] != first.json["id"]
    assert _count(client, demo) == before + 2


def test_replay_works_across_two_instances_on_one_database(make_app):
    one, two = Client(make_app()), Client(make_app())
    auth = {"Authorization": f"Bearer {get_token(one)}"}
    before = _count(one, auth)
    first = _create(one, auth, "two-instances")
    again = _create(two, auth, "two-instances")
    assert again.status_code == 201 and again.json == first.json
    assert again.headers["Idempotent-Replayed"] == "true"
    assert _count(two, auth) == before + 1


def test_a_repeated_update_does_not_write_again(client, auth):
    url = f"{CUSTOMERS}/{demo_id('customer', 1)}"
    version = client.get(url + "?fetchPlan=_local", headers=auth).json["version"]
    headers = {**auth, "Idempotency-Key": "put-1"}
    assert client.put(url, json={"name": "Put Once"}, headers=headers).status_code == 200
    again = client.put(url, json={"name": "Put Once"}, headers=headers)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert client.get(url + "?fetchPlan=_local", headers=auth).json["version"] == version + 1


def _rows():
    return IdempotentRequest.select().count()


def test_a_create_refused_by_validation_keeps_nothing_and_its_key_runs_the_corrected_one(
        client, auth):
    before, customers = _rows(), _count(client, auth)
    first = _create(client, auth, "bad", {"email": "no-name@x.org"})
    assert first.status_code == 400
    assert _rows() == before
    again = _create(client, auth, "bad", {"email": "no-name@x.org"})
    assert again.status_code == 400 and "Idempotent-Replayed" not in again.headers
    corrected = _create(client, auth, "bad", {"name": "Fixed", "email": "fixed@x.org"})
    assert corrected.status_code == 201
    assert _count(client, auth) == customers + 1 and _rows() == before + 1


def test_refused_requests_leave_no_rows(client, auth, alice_auth):
    before = _rows()
    url = f"{CUSTOMERS}/{demo_id('customer', 1)}"
    refused = [
        _create(client, auth, "r1", {"email": "no-name@x.org"}),                  # validation
        _create(client, alice_auth, "r2"),                                          # permission
        client.post("/rest/entities/Nothing", json={}, headers={**auth, "Idempotency-Key": "r3"}),
        client.put(url, json={"name": "x"}, headers={**auth, "Idempotency-Key": "r4",
                                                     "If-Match": '"999999-x"'}),  # precondition
        client.post("/rest/services/orderService/calculateTotal", json={},
                    headers={**auth, "Idempotency-Key": "r5"}),                   # parameters
    ]
    assert [r.status_code for r in refused] == [400, 403, 404, 412, 400]
    assert _rows() == before


def test_a_service_call_is_replayed(client, auth):
    url = "/rest/services/orderService/calculateTotal"
    headers = {**auth, "Idempotency-Key": "svc-1"}
    first = client.post(url, json={"orderId": demo_id("order", 0)}, headers=headers)
    again = client.post(url, json={"orderId": demo_id("order", 0)}, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.get_data() == first.get_data()
    assert again.headers["Idempotent-Replayed"] == "true"


def test_an_expired_key_runs_again(app, client, auth):
    before = _count(client, auth)
    assert _create(client, auth, "old").status_code == 201
    app.replays.clock = lambda: time.time() + app.settings.idempotency_expiry + 1
    again = _create(client, auth, "old")
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert _count(client, auth) == before + 2


def test_the_expiry_is_a_setting(make_app):
    assert make_app().settings.idempotency_expiry == 24 * 3600
    assert make_app({"svc.rest.idempotency-expiry": "2h"}).settings.idempotency_expiry == 7200


@pytest.mark.parametrize("key", ["x" * 256, "caf\u00e9"])
def test_an_invalid_key_is_400(client, auth, key):
    response = client.post(CUSTOMERS, json={"name": "n", "email": "e@x.org"},
                           headers={**auth, "Idempotency-Key": key.encode("utf-8").decode("latin-1")})
    assert response.status_code == 400
    assert response.json["error"] == "Invalid Idempotency-Key"


def _local_user(app, client, name, roles):
    app.users.add(name, f"{name}-password-1", roles)
    response = password_grant(client, name, f"{name}-password-1")
    assert response.status_code == 200, response.json
    return bearer(response.json["access_token"])


TOTAL = "/rest/services/orderService/calculateTotal"


def test_an_external_user_named_like_a_local_user_has_keys_of_its_own(make_app):
    app = make_app(hs256_settings())
    client = Client(app)
    # The same roles as the issuer's "sales": only the identity tells them apart.
    local = _local_user(app, client, "dora", ("rest-minimal", "sales-reader"))
    body = {"orderId": demo_id("order", 0)}
    assert client.post(TOTAL, json=body, headers={**local, "Idempotency-Key": "k"}).status_code == 200
    external = hs256_headers("ext-dora", "dora")
    answer = client.post(TOTAL, json=body, headers={**external, "Idempotency-Key": "k"})
    assert answer.status_code == 200 and "Idempotent-Replayed" not in answer.headers
    again = client.post(TOTAL, json=body, headers={**external, "Idempotency-Key": "k"})
    assert again.headers["Idempotent-Replayed"] == "true"
    # Another subject of the issuer with the same username: keys of its own too.
    other = client.post(TOTAL, json=body,
                        headers={**hs256_headers("ext-dora-2", "dora"), "Idempotency-Key": "k"})
    assert "Idempotent-Replayed" not in other.headers


def test_a_replay_shows_no_more_than_the_caller_may_see_now(make_app):
    client = Client(make_app(hs256_settings()))
    admin, seller = hs256_headers("u-7", "erin", ["admins"]), hs256_headers("u-7", "erin")
    before = _count(client, admin)
    body = {"name": "Once Only", "email": "once@x.org"}
    first = client.post(f"{CUSTOMERS}?responseFetchPlan=_base", json=body,
                        headers={**admin, "Idempotency-Key": "seen-2"})
    assert first.json["email"] == "once@x.org"
    # The same subject, now with a token whose roles hide Customer.email.
    fewer = client.post(f"{CUSTOMERS}?responseFetchPlan=_base", json=body,
                        headers={**seller, "Idempotency-Key": "seen-2"})
    assert fewer.status_code == 409 and fewer.json["error"] == "Idempotency-Key used"
    assert "once@x.org" not in fewer.get_data(as_text=True)
    assert _count(client, admin) == before + 1
    again = client.post(f"{CUSTOMERS}?responseFetchPlan=_base", json=body,
                        headers={**admin, "Idempotency-Key": "seen-2"})
    assert again.headers["Idempotent-Replayed"] == "true" and again.json == first.json



def test_an_error_after_the_write_is_kept_and_a_retry_does_not_write_again(make_app):
    client = Client(make_app({"svc.rest.max-response-entities": "3"}))
    auth = bearer(get_token(client))
    orders = lambda: client.get("/rest/entities/Order/search/count?filter={}",  # noqa: E731
                                headers=auth).json
    body = {"number": "N-1", "date": "2026-01-01", "customer": {"id": demo_id("customer", 0)},
            "lines": [{"product": {"id": demo_id("product", i)}, "quantity": 1} for i in range(3)]}
    url = "/rest/entities/Order?responseFetchPlan=order-with-details"
    before = orders()
    # Written, then too large to answer along the plan.
    first = client.post(url, json=body, headers={**auth, "Idempotency-Key": "late"})
    assert first.status_code == 400 and first.json["error"] == "Response too large"
    again = client.post(url, json=body, headers={**auth, "Idempotency-Key": "late"})
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert orders() == before + 1
