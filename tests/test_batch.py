"""POST /rest/batch: writes run in order in one transaction, all or nothing,
each with the caller's token and permissions and counted as if sent alone."""
import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant
from restsvc.data.write.history import HistoryItem
from restsvc.events import outbox
from restsvc.events.outbox import ChangeEvent
from test_metrics import sample_value, scrape

PRODUCT = demo_id("product", 1)
OWN_CUSTOMER, OWN_ORDER = demo_id("customer", 1), demo_id("order", 1)
CUSTOMERS = "/rest/entities/Customer"


def _traces(app):
    outbox.assign(app.database)
    return HistoryItem.select().count(), ChangeEvent.select().count()


def _named(client, auth, name):
    found = client.post(f"{CUSTOMERS}/search", headers=auth, json={
        "filter": {"conditions": [{"property": "name", "operator": "=", "value": name}]},
        "fetchPlan": "_local"})
    return found.json


def _batch(client, auth, *operations, **headers):
    return client.post("/rest/batch", json={"operations": list(operations)},
                       headers={**auth, **headers})


def test_operations_run_in_order_and_later_ones_use_ids_earlier_ones_created(client, auth):
    response = _batch(
        client, auth,
        {"method": "POST", "path": CUSTOMERS, "body": {"name": "Batch Buyer"}},
        {"method": "PUT", "path": f"{CUSTOMERS}/${{0.id}}?responseFetchPlan=_local",
         "body": {"email": "buyer@x.example"}},
        {"method": "POST", "path": "/rest/entities/Order", "body": {
            "number": "BATCH-1", "date": "2025-04-01", "customer": {"id": "${0.id}"},
            "lines": [{"product": {"id": PRODUCT}, "quantity": 1}]}},
        {"method": "POST", "path": "/rest/services/productPriceService/setPrice",
         "body": {"productId": PRODUCT, "price": 12.5}},
        {"method": "PUT", "path": f"{CUSTOMERS}/search",
         "body": {"filter": {"conditions": [{"property": "id", "operator": "=",
                                             "value": "${0.id}"}]},
                  "values": {"grade": "GOLD"}}})
    assert response.status_code == 200, response.json
    results = response.json["results"]
    assert [r["status"] for r in results] == [201, 200, 201, 200, 200]
    customer = results[0]["body"]["id"]
    assert results[1]["body"]["email"] == "buyer@x.example"
    assert results[4]["body"] == {"count": 1, "dryRun": False}
    stored = client.get(f"/rest/entities/Order/{results[2]['body']['id']}?fetchPlan="
                        "order-with-details", headers=auth).json
    assert stored["customer"]["id"] == customer
    assert _named(client, auth, "Batch Buyer")[0]["grade"] == "GOLD"
    price = client.get(f"/rest/entities/Product/{PRODUCT}", headers=auth).json["price"]
    assert float(price) == 12.5


def test_a_failing_third_operation_leaves_no_trace_of_the_first_two(app, client, auth):
    traces = _traces(app)
    response = _batch(
        client, auth,
        {"method": "POST", "path": CUSTOMERS, "body": {"name": "Never Kept"}},
        {"method": "PUT", "path": f"{CUSTOMERS}/${{0.id}}", "body": {"email": "n@x.example"}},
        {"method": "PUT", "path": f"{CUSTOMERS}/${{0.id}}", "body": {"birthDate": "2999-01-01"}})
    assert 400 <= response.status_code < 500, response.json
    assert response.json["index"] == 2
    assert response.json["error"] == "Batch operation failed"
    assert isinstance(response.json["operation"], list)         # the violations, as alone
    assert _named(client, auth, "Never Kept") == []
    assert _traces(app) == traces


def test_a_later_failure_of_a_change_by_filter_over_its_guard_rolls_back_the_batch(
        app, client, auth):
    traces = _traces(app)
    response = _batch(
        client, auth,
        {"method": "POST", "path": CUSTOMERS, "body": {"name": "Guarded"}},
        {"method": "DELETE", "path": f"{CUSTOMERS}/search",
         "body": {"filter": {"conditions": []}, "maxRows": 1}})
    assert response.status_code == 409, response.json
    assert response.json["index"] == 1
    assert response.json["operation"]["error"] == "Too many rows"
    assert _named(client, auth, "Guarded") == []
    assert _traces(app) == traces


def test_permissions_apply_per_operation(client, auth, reader_auth):
    response = _batch(client, reader_auth,
                      {"method": "POST", "path": CUSTOMERS, "body": {"name": "By Reader"}})
    assert response.status_code == 403, response.json
    assert response.json["index"] == 0
    assert _named(client, auth, "By Reader") == []


def test_row_rules_apply_per_operation(client, auth):
    bruno = bearer(password_grant(client, "bruno", "bruno-password").json["access_token"])
    assert client.put(f"/rest/entities/Order/{OWN_ORDER}", json={"status": "NEW"},
                      headers=auth).status_code == 200
    response = _batch(
        client, bruno,
        {"method": "PUT", "path": f"/rest/entities/Order/{OWN_ORDER}", "body": {"status": "PAID"}},
        {"method": "POST", "path": "/rest/entities/Order", "body": {
            # customer 3: of bruno's tenant (south), not his own
            "number": "NOT-MINE", "date": "2025-04-01", "customer": {"id": demo_id("customer", 3)}}})
    assert response.status_code == 403, response.json
    assert response.json["index"] == 1
    assert client.get(f"/rest/entities/Order/{OWN_ORDER}", headers=auth).json["status"] == "NEW"


def test_scopes_apply_per_operation(client, auth):
    from test_scopes_metadata import admin_token
    read_only = bearer(admin_token(client, "read")["access_token"])
    response = _batch(client, read_only,
                      {"method": "POST", "path": CUSTOMERS, "body": {"name": "Read Scoped"}})
    assert response.status_code == 403, response.json
    assert response.json["index"] == 0
    assert _named(client, auth, "Read Scoped") == []


def _op(path=CUSTOMERS, method="POST", body=None):
    return {"method": method, "path": path, "body": body or {"name": "Bad Batch"}}


@pytest.mark.parametrize("body, status, index", [
    ([_op()], 400, None),
    ({"operations": []}, 400, None),
    ({"operations": "x"}, 400, None),
    ({"operations": [_op(), 5]}, 400, 1),
    ({"operations": [_op(), {**_op(), "headers": {}}]}, 400, 1),
    ({"operations": [_op(), _op(method="GET")]}, 400, 1),
    ({"operations": [_op(), _op(path="rest/entities/Customer")]}, 400, 1),
    ({"operations": [_op(), _op(path=7)]}, 400, 1),
    ({"operations": [_op(path=f"{CUSTOMERS}/${{0.id}}", method="PUT")]}, 400, 0),
    ({"operations": [_op(), _op(path=f"{CUSTOMERS}/${{5.id}}", method="PUT")]}, 400, 1),
    ({"operations": [_op(), _op(path="/rest/batch")]}, 400, 1),
    ({"operations": [_op(), _op(path="/rest/user-session/locale", method="PUT")]}, 400, 1),
    ({"operations": [_op(), _op(path="/rest/nowhere")]}, 404, 1),
    ({"operations": [_op(), _op(path="/rest/entities/Customer/search/count", method="PUT")]},
     405, 1),
    ({"operations": [_op(), _op(path="/rest/entities/Nope")]}, 404, 1),
    ({"operations": [_op(), _op(body=[1])]}, 400, 1),
    ({"operations": [_op(), _op(path=f"{CUSTOMERS}/{demo_id('customer', 9)}", method="DELETE"),
                     _op(path=f"{CUSTOMERS}/${{1.id}}", method="PUT")]}, 400, 2),
])
def test_bad_batches_are_clear_4xx_and_keep_nothing(app, client, auth, body, status, index):
    traces = _traces(app)
    response = client.post("/rest/batch", json=body, headers=auth)
    assert response.status_code == status, response.json
    if index is None:
        assert response.json["error"] == "Malformed request JSON data structure"
    else:
        assert response.json["error"] == "Batch operation failed"
        assert response.json["index"] == index
        assert response.json["operation"]["error"]
    assert _named(client, auth, "Bad Batch") == []
    assert _traces(app) == traces


def test_a_batch_holds_at_most_the_configured_number_of_operations(make_app):
    client = Client(make_app({"svc.rest.max-batch-operations": 2}))
    auth = bearer(get_token(client))
    response = _batch(client, auth, _op(), _op(), _op())
    assert response.status_code == 413, response.json
    assert "at most 2 operations" in response.json["details"]
    assert _batch(client, auth, _op(), _op()).status_code == 200


def test_an_idempotency_key_replays_the_batch_without_running_it_again(client, auth):
    operations = ({"method": "POST", "path": CUSTOMERS, "body": {"name": "Once Only"}},)
    first = _batch(client, auth, *operations, **{"Idempotency-Key": "batch-1"})
    again = _batch(client, auth, *operations, **{"Idempotency-Key": "batch-1"})
    assert first.status_code == again.status_code == 200
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json == first.json
    assert len(_named(client, auth, "Once Only")) == 1


def test_each_operation_counts_for_the_quota_as_if_sent_alone(make_app):
    app = make_app({"svc.rate-limit.client.demo-client": "1/s burst 4"})
    app.quotas.clock = lambda: 1_000_000.0      # no refill while the test runs
    client = Client(app)
    auth = bearer(get_token(client))
    over = _batch(client, auth, *[_op(body={"name": f"Quota {i}"}) for i in range(4)])
    assert over.status_code == 429, over.json       # the batch itself and 4 operations: 5 > 4
    assert over.json["index"] == 3
    assert over.headers["Retry-After"]
    app.quotas.clock = lambda: 1_000_010.0          # full again
    assert _named(client, auth, "Quota 0") == []    # refused before anything ran
    app.quotas.clock = lambda: 1_000_020.0
    done = _batch(client, auth, _op(body={"name": "Quota ok"}), _op(body={"name": "Quota ok"}))
    assert done.status_code == 200
    assert done.headers["RateLimit-Remaining"] == "1"      # 4 - (1 batch + 2 operations)


def test_each_operation_counts_in_the_metrics_as_its_own_request(client, auth):
    before = scrape(client)["restsvc_http_requests"]
    response = _batch(client, auth, _op(body={"name": "Metric A"}), _op(body={"name": "Metric B"}),
                      _op(path="/rest/entities/Customer/none", method="PUT"))
    assert response.status_code == 400
    after = scrape(client)["restsvc_http_requests"]

    def delta(**labels):
        return sample_value(after, "_total", **labels) - sample_value(before, "_total", **labels)
    assert delta(method="POST", route="/rest/entities/<entity_name>", status="2xx") == 2
    assert delta(method="PUT", route="/rest/entities/<entity_name>/<entity_id>", status="4xx") == 1
    assert delta(method="POST", route="/rest/batch", status="4xx") == 1
