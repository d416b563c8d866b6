"""Webhook subscriptions, their dead letters and replays under tenants
(restsvc/docs/tenants.md "Events, webhooks, reports"): a subscription belongs
to the tenant of the caller that registered it; a tenant's caller lists,
reads, replays and deletes its tenant's only, and another's (or a global
caller's) answers as a missing subscription does. Global callers see all."""
from tenant_app import build
from test_events_webhooks import QUICK, SECRET, _deliverer
from webhook_support import Receiver

MISSING = "00000000-0000-4000-8000-000000000000"


def test_a_tenants_caller_sees_and_replays_its_tenants_dead_letters_only(make_app):
    app, client, auth = build(make_app, {**QUICK, "svc.webhooks.retry-period": "1s"})
    receiver = Receiver(answers=[500] * 1000)
    try:
        as_tenant = {key: {**auth["root"], "X-Tenant-Id": key} for key in ("north", "south")}
        hooks = {}
        for key, headers in (*as_tenant.items(), ("global", auth["root"])):
            answer = client.post("/rest/webhooks", headers=headers, json={
                "url": receiver.url, "entities": ["Notice"], "kinds": ["CREATE"],
                "secret": SECRET})
            assert answer.status_code == 201, answer.get_data(as_text=True)
            hooks[key] = answer.json["id"]
        created = client.post("/rest/entities/Notice", headers=auth["root"],
                              json={"title": "Closed on Monday"})
        assert created.status_code == 201
        deliverer = _deliverer(app)

        def dead(key, headers):
            return client.get(f"/rest/webhooks/{hooks[key]}/dead-letters", headers=headers)
        while not all(dead(key, auth["root"]).json for key in hooks):
            deliverer.step()

        for mine, theirs in (("north", "south"), ("south", "north")):
            headers = as_tenant[mine]
            listed = client.get("/rest/webhooks", headers=headers).json
            assert [hook["id"] for hook in listed] == [hooks[mine]]
            assert len(dead(mine, headers).json) == 1
            for other in (theirs, "global"):
                for method, suffix in (("get", ""), ("get", "/dead-letters"),
                                       ("post", "/dead-letters/replay"), ("delete", "")):
                    call = getattr(client, method)
                    refused = call(f"/rest/webhooks/{hooks[other]}{suffix}", headers=headers)
                    missing = call(f"/rest/webhooks/{MISSING}{suffix}", headers=headers)
                    assert refused.status_code == missing.status_code == 404
                    assert refused.json["details"].replace(hooks[other], MISSING) \
                        == missing.json["details"]
        replayed = client.post(f"/rest/webhooks/{hooks['north']}/dead-letters/replay",
                               headers=as_tenant["north"])
        assert replayed.status_code == 200 and replayed.json == {"replayed": 1}
        assert dead("north", auth["root"]).json == []
        assert len(dead("south", auth["root"]).json) == len(dead("global", auth["root"]).json) == 1
        everything = client.get("/rest/webhooks", headers=auth["root"]).json
        assert {hook["id"] for hook in everything} == set(hooks.values())
        assert client.post(f"/rest/webhooks/{hooks['south']}/dead-letters/replay",
                           headers=auth["root"]).json == {"replayed": 1}
    finally:
        receiver.close()


def test_a_tenant_user_cannot_reach_a_global_subscription(make_app):
    _, client, auth = build(make_app, QUICK)
    hook = client.post("/rest/webhooks", headers=auth["root"], json={
        "url": "http://127.0.0.1:9/hook", "entities": ["Notice"], "kinds": ["CREATE"],
        "secret": SECRET}).json["id"]
    assert client.get(f"/rest/webhooks/{hook}", headers=auth["root"]).status_code == 200
    acting = {**auth["root"], "X-Tenant-Id": "north"}
    assert client.get(f"/rest/webhooks/{hook}", headers=acting).status_code == 404
    assert client.get("/rest/webhooks", headers=acting).json == []
