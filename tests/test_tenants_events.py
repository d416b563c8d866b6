"""The change feed, webhooks and predefined queries under tenants
(restsvc/docs/tenants.md): a tenant's caller's feed and queries carry its
tenant's rows only, and it cannot subscribe a webhook to a tenant-scoped
entity (a webhook's deliveries are not narrowed by tenant)."""
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
                         json={**body, "entities": ["Notice"]})
    assert shared.status_code == 201, shared.get_data(as_text=True)
    assert client.post("/rest/webhooks", headers=auth["root"], json=body).status_code == 201
    listed = client.get("/rest/webhooks", headers={**auth["root"], "X-Tenant-Id": "north"})
    assert [hook["entities"] for hook in listed.json] == [["Notice"]]


QUERIES = """<?xml version="1.0" encoding="UTF-8"?>
<queries>
    <query name="byEmail" entity="Account" fetchPlan="_base">
        <filter>{"conditions": [{"property": "email", "operator": "=", "value": ":email"}]}</filter>
        <params><param name="email" type="string"/></params>
    </query>
</queries>
"""


def test_predefined_queries_see_the_callers_tenants_rows_only(make_app, tmp_path):
    path = tmp_path / "queries.xml"
    path.write_text(QUERIES)
    _, client, auth = build(make_app, {"svc.rest.queries-config": str(path)})
    for user in ("nora", "sam"):
        assert client.post(ACCOUNTS, headers=auth[user], json={
            "name": user, "email": "same@example.com"}).status_code == 201
    for user in ("nora", "sam"):
        found = client.get("/rest/queries/Account/byEmail", headers=auth[user],
                           query_string={"email": "same@example.com"})
        assert found.status_code == 200, found.get_data(as_text=True)
        assert [row["name"] for row in found.json] == [user]
        count = client.get("/rest/queries/Account/byEmail/count", headers=auth[user],
                           query_string={"email": "same@example.com"})
        assert count.get_data(as_text=True).strip() == "1"
    everyone = client.get("/rest/queries/Account/byEmail", headers=auth["root"],
                          query_string={"email": "same@example.com"})
    assert sorted(row["name"] for row in everyone.json) == ["nora", "sam"]
