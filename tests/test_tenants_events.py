"""The change feed and webhooks under tenants (restsvc/docs/tenants.md): a
tenant's caller's feed carries its tenant's events only, and it cannot
subscribe a webhook to a tenant-scoped entity (a webhook's deliveries are
not narrowed by tenant)."""
import pytest

from tenant_app import build
from test_events_feed import FAST, _open

ACCOUNTS = "/rest/entities/Account"


@pytest.fixture
def world(make_app):
    app, client, auth = build(make_app, {**FAST, "svc.webhooks.allow-private-addresses": True})
    ids = {}
    for user, name in (("nora", "North"), ("sam", "South")):
        answer = client.post(ACCOUNTS, headers=auth[user], json={
            "name": name, "email": f"{name.lower()}@example.com"})
        assert answer.status_code == 201
        ids[user] = answer.json["id"]
    return app, client, auth, ids


def test_the_feed_carries_the_callers_tenants_events_only(world):
    _, client, auth, ids = world
    reader = _open(client, auth["nora"], "Account")
    for user in ("sam", "nora", "sam", "nora"):
        answer = client.put(f"{ACCOUNTS}/{ids[user]}", headers=auth[user],
                            json={"balance": 5})
        assert answer.status_code == 200
    messages = reader.events(2)
    assert [m["json"]["entityId"] for m in messages] == [ids["nora"], ids["nora"]]
    reader.close()
    everything = _open(client, auth["root"], "Account")
    client.put(f"{ACCOUNTS}/{ids['sam']}", headers=auth["sam"], json={"balance": 6})
    assert everything.events(1)[0]["json"]["entityId"] == ids["sam"]
    everything.close()


def test_a_tenants_caller_cannot_subscribe_a_webhook_to_tenant_rows(world):
    _, client, auth, _ = world
    body = {"url": "http://127.0.0.1:9/hook", "entities": ["Account"], "kinds": ["UPDATE"],
            "secret": "s" * 32}
    acting = client.post("/rest/webhooks", headers={**auth["root"], "X-Tenant-Id": "north"},
                         json=body)
    assert acting.status_code == 403
    assert "tenant" in acting.json["details"]
    shared = client.post("/rest/webhooks", headers={**auth["root"], "X-Tenant-Id": "north"},
                         json={**body, "entities": ["Customer"]})
    assert shared.status_code == 201, shared.get_data(as_text=True)
    assert client.post("/rest/webhooks", headers=auth["root"], json=body).status_code == 201
    listed = client.get("/rest/webhooks", headers={**auth["root"], "X-Tenant-Id": "north"})
    assert [hook["entities"] for hook in listed.json] == [["Customer"]]
