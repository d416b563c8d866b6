"""The demo's tenants (restsvc/docs/tenants.md "The demo"): alice (north) and
bob (south) try to see, change, refer to, count, aggregate, export, search,
read the history of, follow and replay the other tenant's customer and order;
each attempt answers exactly as a missing row's does. admin sees both
tenants; a tenant's administrator manages its own tenant's users only."""
import pytest

from conftest import bearer, demo_id, password_grant
from test_events_feed import FAST, _open

MISSING = "01234567-89ab-7def-8123-456789abcdef"
# user -> (own tenant, the row numbers of the other tenant's customer and order)
USERS = {"alice": ("north", 1), "bob": ("south", 2)}


@pytest.fixture
def demo(make_app):
    from werkzeug.test import Client
    app = make_app({**FAST, "svc.webhooks.allow-private-addresses": True})
    client = Client(app)
    auth = {}
    for user in ("alice", "bob", "admin", "north-admin", "south-admin"):
        answer = password_grant(client, user, f"{user}-password")
        assert answer.status_code == 200, answer.get_data(as_text=True)
        auth[user] = bearer(answer.json["access_token"])
    return app, client, auth


def acting(auth, user):
    """admin acting for ``user``'s tenant: every permission, one tenant's rows."""
    return {**auth["admin"], "X-Tenant-Id": USERS[user][0]}


def other(user, kind):
    return demo_id(kind, USERS[user][1])


def same_answer(theirs, nothing, row_id):
    """Status and body alike, but for the id each names."""
    assert theirs.status_code == nothing.status_code, theirs.get_data(as_text=True)
    assert theirs.get_data(as_text=True).replace(row_id, MISSING) == nothing.get_data(
        as_text=True)
    return theirs.status_code


def count(client, headers, entity):
    answer = client.get(f"/rest/entities/{entity}/search/count", headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return answer.json


def test_each_user_sees_its_tenants_half_and_admin_sees_everything(demo):
    _, client, auth = demo
    assert (count(client, auth["alice"], "Customer"), count(client, auth["alice"], "Order")) \
        == (10, 25)
    assert (count(client, auth["bob"], "Customer"), count(client, auth["bob"], "Order")) \
        == (10, 25)
    assert (count(client, auth["admin"], "Customer"), count(client, auth["admin"], "Order")) \
        == (20, 50)
    for user, (tenant, _) in USERS.items():
        rows = client.get("/rest/entities/Order", headers=acting(auth, user),
                          query_string={"limit": 100}).json
        assert len(rows) == 25 and {row["tenantId"] for row in rows} == {tenant}
    for number in (1, 2):
        for kind in ("customer", "order"):
            entity = kind.title()
            got = client.get(f"/rest/entities/{entity}/{demo_id(kind, number)}",
                             headers=auth["admin"])
            assert got.status_code == 200
    products = client.get("/rest/entities/Product/search/count", headers=auth["bob"]).json
    assert products == 10     # shared


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("kind", ["customer", "order"])
def test_another_tenants_row_is_read_changed_and_deleted_as_a_missing_one(demo, user, kind):
    _, client, auth = demo
    entity, theirs = kind.title(), other(user, kind)
    for headers in (auth[user], acting(auth, user)):
        for method, extra in (("get", {}), ("put", {"json": {"amount": 1} if kind == "order"
                                                    else {"name": "Taken"}}), ("delete", {})):
            call = getattr(client, method)
            status = same_answer(call(f"/rest/entities/{entity}/{theirs}", headers=headers,
                                      **extra),
                                 call(f"/rest/entities/{entity}/{MISSING}", headers=headers,
                                      **extra), theirs)
            assert status in (403, 404)
    assert client.get(f"/rest/entities/{entity}/{theirs}", headers=auth["admin"]).json[
        "version"] == 1


@pytest.mark.parametrize("user", USERS)
def test_a_reference_to_another_tenants_customer_is_refused_as_a_missing_one(demo, user):
    _, client, auth = demo
    headers, theirs = acting(auth, user), other(user, "customer")

    def order(customer):
        return client.post("/rest/entities/Order", headers=headers, json={
            "number": "X1", "date": "2024-05-01", "customer": {"id": customer}})
    assert same_answer(order(theirs), order(MISSING), theirs) == 400
    own = demo_id("customer", USERS[user][1] + 1)      # the next number: its own tenant's
    assert order(own).status_code == 201


@pytest.mark.parametrize("user", USERS)
def test_searches_counts_and_aggregates_do_not_find_another_tenants_rows(demo, user):
    _, client, auth = demo
    for kind, attribute in (("customer", "id"), ("order", "customer.id")):
        wanted = other(user, "customer")
        condition = {"conditions": [{"property": attribute, "operator": "=", "value": wanted}]}
        entity = f"/rest/entities/{kind.title()}"
        found = client.post(f"{entity}/search", headers=auth[user], json={"filter": condition})
        assert found.status_code == 200 and found.json == []
        counted = client.post(f"{entity}/search/count", headers=auth[user],
                              json={"filter": condition})
        assert counted.json == 0
        everyone = client.post(f"{entity}/search/count", headers=auth["admin"],
                               json={"filter": condition})
        assert everyone.json > 0
    name = client.get(f"/rest/entities/Customer/{other(user, 'customer')}",
                      headers=auth["admin"]).json["name"]
    by_name = client.get("/rest/entities/Customer/search", headers=auth[user], query_string={
        "filter": '{"conditions":[{"property":"name","operator":"=","value":"%s"}]}' % name})
    assert by_name.json == []
    groups = client.post("/rest/entities/Order/aggregate", headers=auth[user], json={
        "groupBy": ["customer"], "count": True})
    assert groups.status_code == 200, groups.get_data(as_text=True)
    assert sum(group["count"] for group in groups.json) == 25
    assert other(user, "customer") not in {group["group"]["customer"] for group in groups.json}


@pytest.mark.parametrize("user", USERS)
def test_an_export_holds_the_callers_tenants_rows_only(demo, user):
    _, client, auth = demo
    theirs = client.get(f"/rest/entities/Customer/{other(user, 'customer')}",
                        headers=auth["admin"]).json["name"]
    exported = client.get("/rest/entities/Customer", headers=auth[user],
                          query_string={"format": "csv", "limit": 100})
    assert exported.status_code == 200, exported.get_data(as_text=True)
    lines = exported.get_data(as_text=True).strip().splitlines()
    assert len(lines) == 1 + 10 and not any(theirs in line for line in lines)


@pytest.mark.parametrize("user", USERS)
def test_the_history_of_another_tenants_row_is_a_missing_rows(demo, user):
    _, client, auth = demo
    headers = acting(auth, user)
    theirs = other(user, "order")
    client.put(f"/rest/entities/Order/{theirs}", headers=auth["admin"], json={"amount": 3})
    same_answer(client.get(f"/rest/entities/Order/{theirs}/history", headers=headers),
                client.get(f"/rest/entities/Order/{MISSING}/history", headers=headers), theirs)
    items = client.get("/rest/entities/HistoryItem", headers=headers,
                       query_string={"limit": 1000}).json
    assert theirs not in {item["entityId"] for item in items}
    assert client.get(f"/rest/entities/Order/{theirs}/history", headers=auth["admin"]).json


def test_the_feed_and_its_replay_carry_the_callers_tenants_events_only(demo):
    app, client, auth = demo
    from restsvc.events import outbox
    start = outbox.position(app.database)
    north, south = demo_id("customer", 0), demo_id("customer", 1)
    for customer, name in ((south, "S1"), (north, "N1"), (south, "S2"), (north, "N2")):
        answer = client.put(f"/rest/entities/Customer/{customer}", headers=auth["admin"],
                            json={"name": name})
        assert answer.status_code == 200
    for user, mine in (("alice", north), ("bob", south)):
        # A replay from before the changes: the caller's tenant's events only.
        reader = _open(client, acting(auth, user), "Customer", **{"Last-Event-ID": str(start)})
        events = reader.events(2)
        assert [event["json"]["entityId"] for event in events] == [mine, mine]
        reader.close()
    webhook = client.post("/rest/webhooks", headers=acting(auth, "alice"), json={
        "url": "http://127.0.0.1:9/hook", "entities": ["Customer"], "kinds": ["UPDATE"],
        "secret": "s" * 32})
    assert webhook.status_code == 403      # tenant rows: no webhook of a tenant's caller


def test_a_tenant_administrator_manages_its_own_tenants_users_only(demo):
    _, client, auth = demo
    for admin, users, stranger in (("north-admin", {"alice", "north-admin"}, "bob"),
                                   ("south-admin", {"bob", "bruno", "south-admin"}, "alice")):
        seen = client.get("/rest/entities/User", headers=auth[admin])
        assert seen.status_code == 200 and {u["username"] for u in seen.json} == users
        stranger_id = demo_id("user", stranger)
        same_answer(client.put(f"/rest/entities/User/{stranger_id}", headers=auth[admin],
                               json={"firstName": "x"}),
                    client.put(f"/rest/entities/User/{MISSING}", headers=auth[admin],
                               json={"firstName": "x"}), stranger_id)
        elsewhere = client.post("/rest/entities/User", headers=auth[admin],
                                json={"username": f"new-{admin}", "tenantId": "elsewhere"})
        assert elsewhere.status_code == 400, elsewhere.get_data(as_text=True)
        created = client.post("/rest/entities/User", headers=auth[admin],
                              json={"username": f"new-{admin}"})
        assert created.status_code == 201, created.get_data(as_text=True)
    everyone = {u["username"]: u.get("tenantId")
                for u in client.get("/rest/entities/User", headers=auth["admin"]).json}
    assert everyone["new-north-admin"] == "north" and everyone["new-south-admin"] == "south"
    assert everyone["admin"] is None
    assert client.get("/rest/entities/Customer", headers=auth["north-admin"]).status_code == 403
