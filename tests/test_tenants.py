"""Tenants (restsvc/docs/tenants.md): a tenant's caller never sees, counts,
changes or refers to another tenant's rows; each attempt answers as a
missing row does. Global callers see every tenant and act for one with
``X-Tenant-Id`` when they hold the grant."""
import pytest

from conftest import password_grant
from tenant_app import PASSWORD, build

ACCOUNTS = "/rest/entities/Account"
TICKETS = "/rest/entities/Ticket"


@pytest.fixture
def world(make_app):
    app, client, auth = build(make_app)
    ids = {}
    for user, name, email in (("nora", "North One", "n1@example.com"),
                              ("nora", "North Two", "same@example.com"),
                              ("sam", "South One", "s1@example.com"),
                              ("sam", "South Two", "same@example.com")):
        created = client.post(ACCOUNTS, headers=auth[user], json={
            "name": name, "email": email, "balance": 10, "country": {"id": "DE"}})
        assert created.status_code == 201, created.get_data(as_text=True)
        ids[name] = created.json["id"]
    return app, client, auth, ids


def names(answer):
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return sorted(row["name"] for row in answer.json)


def test_a_create_is_stamped_with_the_callers_tenant_and_the_same_email_may_repeat(world):
    _, client, auth, ids = world
    north = client.get(f"{ACCOUNTS}/{ids['North Two']}", headers=auth["nora"]).json
    south = client.get(f"{ACCOUNTS}/{ids['South Two']}", headers=auth["sam"]).json
    assert (north["tenantId"], south["tenantId"]) == ("north", "south")
    assert north["email"] == south["email"] == "same@example.com"
    again = client.post(ACCOUNTS, headers=auth["nora"], json={
        "name": "North Three", "email": "n1@example.com"})
    assert again.status_code >= 400 and again.status_code != 500   # unique within north


def test_a_tenants_create_answers_its_row_as_a_get_does(world):
    """A tenant's caller's create along a plan answers the row as a get along
    that plan does, ETag included (on PostgreSQL read in the write's own
    message, whose load by id takes the tenant first)."""
    _, client, auth, _ = world
    for number in range(3):     # prepared from the second on
        created = client.post(ACCOUNTS, headers=auth["nora"], query_string={"responseFetchPlan": "_base"},
                              json={"name": f"North Plan {number}", "email": f"np{number}@example.com"})
        assert created.status_code == 201, created.get_data(as_text=True)
        assert (created.json["tenantId"], created.json["name"]) == ("north", f"North Plan {number}")
        got = client.get(created.headers["Location"], headers=auth["nora"],
                         query_string={"fetchPlan": "_base"})
        assert got.get_data() == created.get_data() and got.headers["ETag"] == created.headers["ETag"]
        assert client.get(created.headers["Location"], headers=auth["sam"]).status_code == 404


def test_lists_searches_counts_and_aggregates_see_one_tenant(world):
    _, client, auth, _ = world
    assert names(client.get(ACCOUNTS, headers=auth["nora"])) == ["North One", "North Two"]
    listed = client.get(ACCOUNTS, headers=auth["sam"], query_string={"returnCount": "true"})
    assert names(listed) == ["South One", "South Two"] and listed.headers["X-Total-Count"] == "2"
    found = client.post(f"{ACCOUNTS}/search", headers=auth["nora"], json={"filter": {
        "conditions": [{"property": "email", "operator": "=", "value": "same@example.com"}]}})
    assert names(found) == ["North Two"]
    by_url = client.get(f"{ACCOUNTS}/search", headers=auth["sam"], query_string={
        "filter": '{"conditions":[{"property":"name","operator":"contains","value":"One"}]}'})
    assert names(by_url) == ["South One"]
    assert names(client.get(ACCOUNTS, headers=auth["root"])) == [
        "North One", "North Two", "South One", "South Two"]


def test_pages_after_a_cursor_count_and_aggregates_stay_in_the_tenant(world):
    _, client, auth, _ = world
    first = client.get(ACCOUNTS, headers=auth["nora"], query_string={"limit": 1, "sort": "name"})
    assert names(first) == ["North One"]
    link = first.headers["Link"]
    after = link[link.index("after=") + 6:].split("&")[0].split(">")[0]
    rest = client.get(ACCOUNTS, headers=auth["nora"], query_string={
        "limit": 5, "sort": "name", "after": after})
    assert names(rest) == ["North Two"]
    count = client.get(f"{ACCOUNTS}/search/count", headers=auth["sam"])
    assert count.status_code == 200 and count.json == 2
    groups = client.post(f"{ACCOUNTS}/aggregate", headers=auth["nora"], json={
        "groupBy": ["country"], "count": True, "sum": ["balance"]})
    assert groups.status_code == 200, groups.get_data(as_text=True)
    assert [(g["count"], g["sum"]["balance"]) for g in groups.json] == [(2, 20)]
    everything = client.post(f"{ACCOUNTS}/aggregate", headers=auth["root"], json={
        "count": True})
    assert everything.json[0]["count"] == 4


def test_another_tenants_row_answers_as_a_missing_row(world):
    _, client, auth, ids = world
    south = ids["South One"]
    missing = "01234567-89ab-7def-8123-456789abcdef"
    for method, extra in (("get", {}), ("put", {"json": {"name": "taken"}}), ("delete", {})):
        theirs = getattr(client, method)(f"{ACCOUNTS}/{south}", headers=auth["nora"], **extra)
        nothing = getattr(client, method)(f"{ACCOUNTS}/{missing}", headers=auth["nora"], **extra)
        assert theirs.status_code == nothing.status_code == 404
        assert theirs.json["error"] == nothing.json["error"]
    kept = client.get(f"{ACCOUNTS}/{south}", headers=auth["sam"]).json
    assert kept["name"] == "South One" and kept["version"] == 1


def test_a_reference_to_another_tenants_row_is_refused_as_a_missing_one(world):
    _, client, auth, ids = world
    theirs = client.post(TICKETS, headers=auth["nora"], json={
        "title": "t", "account": {"id": ids["South One"]}})
    nothing = client.post(TICKETS, headers=auth["nora"], json={
        "title": "t", "account": {"id": "01234567-89ab-7def-8123-456789abcdef"}})
    assert theirs.status_code == nothing.status_code == 400
    assert theirs.json == nothing.json
    mine = client.post(TICKETS, headers=auth["nora"], json={
        "title": "t", "account": {"id": ids["North One"]}})
    assert mine.status_code == 201
    # A global caller may not mix tenants either.
    mixed = client.post(TICKETS, headers=auth["root"], json={
        "title": "t", "tenantId": "north", "account": {"id": ids["South One"]}})
    assert mixed.status_code == 400


def test_tenant_id_is_read_only_for_a_tenants_caller(world):
    _, client, auth, ids = world
    refused = {}
    for tenant in ("south", "west"):    # another tenant, and none: refused alike
        refused[tenant] = client.post(ACCOUNTS, headers=auth["nora"], json={
            "name": "Sneaky", "email": "x@example.com", "tenantId": tenant})
        assert refused[tenant].status_code == 400, refused[tenant].get_data(as_text=True)
    assert refused["south"].json == refused["west"].json
    assert "read-only" in refused["south"].json["details"]
    changed = client.put(f"{ACCOUNTS}/{ids['North One']}", headers=auth["nora"],
                         json={"tenantId": "south"})
    assert changed.status_code == 400 and changed.json["error"] == "Entity update failed"
    created = client.post(ACCOUNTS, headers=auth["nora"], json={
        "name": "Own", "email": "x@example.com", "tenantId": "north"})     # its own: taken
    assert created.status_code == 201 and created.json.get("tenantId", "north") == "north"
    assert "Sneaky" not in names(client.get(ACCOUNTS, headers=auth["sam"]))
    assert "Sneaky" not in names(client.get(ACCOUNTS, headers=auth["nora"]))
    moved = client.put(f"{ACCOUNTS}/{ids['North One']}", headers=auth["root"],
                       json={"tenantId": "south"})
    assert moved.status_code == 200
    assert client.get(f"{ACCOUNTS}/{ids['North One']}", headers=auth["nora"]).status_code == 200


def test_a_global_caller_names_the_tenant_of_what_it_creates(make_app):
    _, client, auth = build(make_app, {"svc.tenants.default": ""})
    unnamed = client.post(ACCOUNTS, headers=auth["root"], json={"name": "G", "email": "g@x.io"})
    assert unnamed.status_code == 400 and unnamed.json[0]["path"] == "tenantId"
    unknown = client.post(ACCOUNTS, headers=auth["root"], json={
        "name": "G", "email": "g@x.io", "tenantId": "west"})
    assert unknown.status_code == 400
    named = client.post(ACCOUNTS, headers=auth["root"], json={
        "name": "G", "email": "g@x.io", "tenantId": "south"})
    assert named.status_code == 201
    assert "G" in names(client.get(ACCOUNTS, headers=auth["sam"]))


def test_a_tenant_found_is_asked_again_once_the_gate_reads_the_token_again(make_app, monkeypatch):
    """A global caller's creates ask whether the tenant they name exists once
    per principal the gate keeps (gate.RECHECK_SECONDS), not once per create."""
    from restsvc.security import gate
    from restsvc.security.tenants import Tenant
    _, client, auth = build(make_app, {"svc.tenants.default": ""})
    west = client.post("/rest/entities/Tenant", headers=auth["root"],
                       json={"tenantId": "west", "name": "West"})
    assert west.status_code == 201, west.json

    def create(name):
        return client.post(ACCOUNTS, headers=auth["root"], json={
            "name": name, "email": f"{name}@x.io", "tenantId": "west"}).status_code
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 3600)
    assert create("w1") == 201
    Tenant.delete().where(Tenant.tenantId == "west").execute()
    assert create("w2") == 201          # the same principal: west was found for it
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 0)
    assert create("w3") == 400          # its token read again: west is asked for, and gone


def test_a_global_callers_create_naming_no_tenant_goes_to_the_referred_rows_or_the_default(
        world):
    _, client, auth, ids = world     # the shipped demo settings: svc.tenants.default north
    unnamed = client.post(ACCOUNTS, headers=auth["root"], json={"name": "G", "email": "g@x.io"})
    assert unnamed.status_code == 201
    assert client.get(f"{ACCOUNTS}/{unnamed.json['id']}", headers=auth["nora"]).status_code == 200
    ticket = client.post(TICKETS, headers=auth["root"], json={
        "title": "t", "account": {"id": ids["South One"]}})
    assert ticket.status_code == 201
    assert [t["title"] for t in client.get(TICKETS, headers=auth["sam"]).json] == ["t"]


def test_the_tenant_header_needs_the_grant_and_limits_a_global_caller(world):
    _, client, auth, _ = world
    acting = {**auth["root"], "X-Tenant-Id": "south"}
    assert names(client.get(ACCOUNTS, headers=acting)) == ["South One", "South Two"]
    created = client.post(ACCOUNTS, headers=acting, json={"name": "Via header",
                                                          "email": "h@example.com"})
    assert created.status_code == 201 and created.json.get("tenantId", "south") == "south"
    without_grant = client.get(ACCOUNTS, headers={**auth["plain"], "X-Tenant-Id": "south"})
    assert without_grant.status_code == 403
    other = client.get(ACCOUNTS, headers={**auth["nora"], "X-Tenant-Id": "south"})
    assert other.status_code == 403
    own = client.get(ACCOUNTS, headers={**auth["nora"], "X-Tenant-Id": "north"})
    assert names(own) == ["North One", "North Two"]
    unknown = client.get(ACCOUNTS, headers={**auth["root"], "X-Tenant-Id": "west"})
    assert unknown.status_code == 400


def test_the_tenant_header_is_checked_whatever_the_request_asks_for(world):
    _, client, auth, _ = world
    for path in ("/rest/userInfo", "/rest/metadata/entities", "/rest/api-keys"):
        assert client.get(path, headers={**auth["plain"], "X-Tenant-Id": "south"}
                          ).status_code == 403
        assert client.get(path, headers={**auth["root"], "X-Tenant-Id": "west"}
                          ).status_code == 400
        assert client.get(path, headers={**auth["root"], "X-Tenant-Id": "south"}
                          ).status_code == 200
    assert client.get("/health/live", headers={"X-Tenant-Id": "west"}).status_code == 200


def test_a_disabled_tenants_tokens_stop_working(world, monkeypatch):
    app, client, auth, _ = world
    from restsvc.security import gate
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 0)
    assert client.get(ACCOUNTS, headers=auth["nora"]).status_code == 200
    disabled = client.get("/rest/entities/Tenant", headers=auth["root"]).json
    north = next(row for row in disabled if row["tenantId"] == "north")
    answer = client.put(f"/rest/entities/Tenant/{north['id']}", headers=auth["root"],
                        json={"enabled": False})
    assert answer.status_code == 200
    assert client.get(ACCOUNTS, headers=auth["nora"]).status_code == 401
    assert client.get(ACCOUNTS, headers=auth["sam"]).status_code == 200
    assert client.get(ACCOUNTS, headers={**auth["root"], "X-Tenant-Id": "north"}
                      ).status_code == 400
    assert password_grant(client, "nora", PASSWORD).status_code == 400    # no sign-in either
    app.tenants.set_enabled("north", True)
    assert client.get(ACCOUNTS, headers=auth["nora"]).status_code == 200
    assert password_grant(client, "nora", PASSWORD).status_code == 200


def test_history_and_export_hold_only_the_tenants_rows(world):
    _, client, auth, ids = world
    client.put(f"{ACCOUNTS}/{ids['South One']}", headers=auth["sam"], json={"balance": 99})
    items = client.get("/rest/entities/HistoryItem", headers=auth["nora"])
    assert items.status_code == 200
    assert {item["entityId"] for item in items.json} <= {ids["North One"], ids["North Two"]}
    assert items.json
    exported = client.get(ACCOUNTS, headers=auth["nora"], query_string={"format": "csv"})
    assert exported.status_code == 200, exported.get_data(as_text=True)
    text = exported.get_data(as_text=True)
    assert "North One" in text and "South" not in text


def test_services_data_access_is_limited_to_the_callers_tenant(world):
    app, _, _, _ = world
    from restsvc.data.access import Access
    from restsvc.data.bound import DataAccess
    base = app.data
    principal_permissions = app.roles.permissions(("rest-minimal", "accounts"))
    access = Access(app.metadata, principal_permissions, {"username": "svc", "userId": ""},
                    app.database, base.sql_cache, tenant="south")
    data = DataAccess(base, access)
    rows = data.search("Account")
    assert sorted(row.name for row in rows) == ["South One", "South Two"]
    assert data.count("Account") == 2


def test_a_tenant_administrator_manages_only_its_tenants_users(world):
    _, client, auth, _ = world
    seen = client.get("/rest/entities/User", headers=auth["nadia"])
    assert seen.status_code == 200
    assert sorted(user["username"] for user in seen.json) == [
        "alice", "nadia", "nora", "north-admin"]     # the test's and the demo's of north
    assert client.post("/rest/entities/User", headers=auth["nadia"], json={
        "username": "newbie", "tenantId": "south"}).status_code == 400
    created = client.post("/rest/entities/User", headers=auth["nadia"], json={
        "username": "newbie"})
    assert created.status_code == 201
    users = client.get("/rest/entities/User", headers=auth["root"]).json
    assert next(u for u in users if u["username"] == "newbie")["tenantId"] == "north"
    sam = next(u for u in users if u["username"] == "sam")
    assert client.put(f"/rest/entities/User/{sam['id']}", headers=auth["nadia"],
                      json={"firstName": "x"}).status_code == 404


def test_history_of_another_tenants_row_and_bulk_writes_answer_as_missing(world):
    _, client, auth, ids = world
    theirs = client.get(f"{ACCOUNTS}/{ids['South One']}/history", headers=auth["nora"])
    nothing = client.get(f"{ACCOUNTS}/01234567-89ab-7def-8123-456789abcdef/history",
                         headers=auth["nora"])
    mine = client.get(f"{ACCOUNTS}/{ids['North One']}/history", headers=auth["nora"])
    assert (theirs.status_code, theirs.json) == (nothing.status_code, nothing.json) == (200, [])
    assert mine.status_code == 200 and mine.json
    bulk = client.delete(ACCOUNTS, headers=auth["nora"], json=[
        {"id": ids["North One"]}, {"id": ids["South One"]}])
    assert bulk.status_code == 404
    assert names(client.get(ACCOUNTS, headers=auth["sam"])) == ["South One", "South Two"]
    assert names(client.get(ACCOUNTS, headers=auth["nora"])) == ["North One", "North Two"]


def test_openapi_describes_tenant_id_read_only_and_the_header(world):
    _, client, auth, _ = world
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth["root"]).json
    account = document["components"]["schemas"]["entity_Account"]["properties"]["tenantId"]
    assert account.get("readOnly") is True
    listing = document["paths"]["/rest/entities/Account"]["get"]["parameters"]
    assert any(p["name"] == "X-Tenant-Id" and p["in"] == "header" for p in listing)


def test_an_import_by_natural_key_finds_the_callers_tenants_row_only(world):
    _, client, auth, ids = world
    body = '{"email":"same@example.com","name":"North Renamed"}\n{"email":"s1@example.com","name":"New"}'
    answer = client.post(f"{ACCOUNTS}/import", headers={
        **auth["nora"], "Content-Type": "application/x-ndjson"}, data=body,
        query_string={"mode": "upsertByKey"})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert (answer.json["created"], answer.json["updated"]) == (1, 1)
    assert names(client.get(ACCOUNTS, headers=auth["nora"])) == ["New", "North One",
                                                                "North Renamed"]
    assert names(client.get(ACCOUNTS, headers=auth["sam"])) == ["South One", "South Two"]


def test_joins_reach_only_the_tenants_rows(world):
    app, client, auth, ids = world
    for user, account in (("nora", "North One"), ("sam", "South One")):
        assert client.post(TICKETS, headers=auth[user], json={
            "title": f"{user}'s", "account": {"id": ids[account]}}).status_code == 201
    for _ in range(2):      # the second time from the kept SQL text
        sorted_by = client.get(TICKETS, headers=auth["nora"],
                               query_string={"sort": "account.name"})
        assert [t["title"] for t in sorted_by.json] == ["nora's"]
        across = client.post(f"{TICKETS}/search", headers=auth["nora"], json={"filter": {
            "conditions": [{"property": "account.name", "operator": "=",
                            "value": "South One"}]}})
        assert across.status_code == 200 and across.json == []
        theirs = client.post(f"{TICKETS}/search", headers=auth["sam"], json={"filter": {
            "conditions": [{"property": "account.email", "operator": "=",
                            "value": "s1@example.com"}]}})
        assert [t["title"] for t in theirs.json] == ["sam's"]
    loaded = client.get(f"{TICKETS}", headers=auth["sam"],
                        query_string={"fetchPlan": "_base"}).json
    assert [t["title"] for t in loaded] == ["sam's"]
    assert any(key[-1] is True for key in app.data.sql_cache)     # tenants' texts are kept


def test_composition_children_belong_to_their_owners_tenant(world):
    _, client, auth, ids = world
    created = client.post(ACCOUNTS, headers=auth["root"], json={
        "name": "Global's", "email": "g@example.com", "tenantId": "north",
        "notes": [{"text": "first"}, {"text": "second", "tenantId": "south"}]})
    assert created.status_code == 201, created.get_data(as_text=True)
    added = client.put(f"{ACCOUNTS}/{ids['South One']}", headers=auth["root"], json={
        "notes": [{"text": "south's"}]})
    assert added.status_code == 200, added.get_data(as_text=True)
    north = client.get("/rest/entities/Note", headers=auth["nora"]).json
    south = client.get("/rest/entities/Note", headers=auth["sam"]).json
    assert sorted(note["text"] for note in north) == ["first", "second"]
    assert [note["text"] for note in south] == ["south's"]
    loaded = client.get(f"{ACCOUNTS}/{created.json['id']}", headers=auth["sam"])
    assert loaded.status_code == 404
