"""The tenant label of the metrics (``svc.metrics.tenant-label``,
restsvc/docs/tenants.md "Metrics"): requests and their time by the caller's
tenant, an empty label for global and anonymous callers, capped; off by default."""
from werkzeug.test import Client

from conftest import bearer, get_token, password_grant
from test_metrics import families, sample_value

CUSTOMERS = "/rest/entities/Customer"


def signed_in(client, user):
    return bearer(password_grant(client, user, f"{user}-password").json["access_token"])


def scrape(client):
    monitor = bearer(get_token(client, "monitor", "monitor-secret"))
    client.get("/metrics", headers=monitor)
    return families(client.get("/metrics", headers=monitor).get_data(as_text=True))


def test_requests_are_counted_by_the_callers_tenant(make_app):
    client = Client(make_app({"svc.metrics.tenant-label": True}))
    alice, bob, admin = (signed_in(client, user) for user in ("alice", "bob", "admin"))
    for _ in range(3):
        assert client.get(CUSTOMERS, headers=alice).status_code == 200
    assert client.get(f"{CUSTOMERS}/01234567-89ab-7def-8123-456789abcdef",
                      headers=bob).status_code == 404
    assert client.get(CUSTOMERS, headers={**admin, "X-Tenant-Id": "south"}).status_code == 200
    metrics = scrape(client)
    requests, seconds = (metrics["restsvc_tenant_requests"],
                         metrics["restsvc_tenant_request_seconds"])
    assert sample_value(requests, "_total", tenant="north", status="2xx") == 3
    assert sample_value(requests, "_total", tenant="south", status="4xx") == 1
    assert sample_value(requests, "_total", tenant="south", status="2xx") == 0
    # admin acting for south is a global caller: counted under the empty label
    assert sample_value(requests, "_total", tenant="", status="2xx") >= 5  # tokens, admin's, scrape
    assert sample_value(seconds, "_total", tenant="north") > 0
    assert {sample.labels["tenant"] for sample in seconds.samples} == {"", "north", "south"}


def test_tenant_labels_are_capped(make_app, monkeypatch):
    from restsvc.observability import labels
    monkeypatch.setattr(labels, "MAX_TENANTS", 2)      # the empty label and one tenant
    client = Client(make_app({"svc.metrics.tenant-label": True}))
    for user in ("alice", "bob"):
        assert client.get(CUSTOMERS, headers=signed_in(client, user)).status_code == 200
    seen = {sample.labels["tenant"] for sample in scrape(client)["restsvc_tenant_requests"].samples}
    assert seen == {"", "north", "other"}, seen


def test_the_tenant_label_is_off_by_default(make_app):
    client = Client(make_app())
    assert client.get(CUSTOMERS, headers=signed_in(client, "alice")).status_code == 200
    metrics = scrape(client)
    assert "restsvc_tenant_requests" not in metrics
    assert "restsvc_tenant_request_seconds" not in metrics
    assert all("tenant" not in sample.labels for family in metrics.values()
               for sample in family.samples)
