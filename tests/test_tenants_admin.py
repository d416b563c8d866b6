"""A tenant's administrator (restsvc/docs/tenants.md "What a tenant's caller
sees"): north-admin creates, lists and disables north's users and makes,
lists and revokes the API keys of north's users and of the clients bound to
north; south's users, clients and keys answer as missing ones; it neither
makes tenants nor acts for another tenant."""
from conftest import bearer, demo_id, get_token, password_grant
from tenant_app import build
from test_tenants_demo import MISSING, demo, same_answer  # noqa: F401  (the demo fixture)

USERS = "/rest/entities/User"
KEYS = "/rest/api-keys"
MISSING_KEY = "k" * 22


def test_a_tenant_administrator_creates_and_disables_its_tenants_users(demo):  # noqa: F811
    app, client, auth = demo
    made = client.post(USERS, headers=auth["north-admin"], json={"username": "nils"})
    assert made.status_code == 201, made.get_data(as_text=True)
    app.users.set_password("nils", "nils-password")
    app.users.set_roles("nils", ["rest-minimal"])
    nils = bearer(password_grant(client, "nils", "nils-password").json["access_token"])
    assert client.get("/rest/userInfo", headers=nils).status_code == 200
    disabled = client.put(f"{USERS}/{made.json['id']}", headers=auth["north-admin"],
                          json={"active": False})
    assert disabled.status_code == 200, disabled.get_data(as_text=True)
    assert client.get("/rest/userInfo", headers=nils).status_code == 401
    assert password_grant(client, "nils", "nils-password").status_code in (400, 401)
    bob = demo_id("user", "bob")           # south's: as a missing user, to change and to delete
    same_answer(client.put(f"{USERS}/{bob}", headers=auth["north-admin"], json={"active": False}),
                client.put(f"{USERS}/{MISSING}", headers=auth["north-admin"],
                           json={"active": False}), bob)
    same_answer(client.delete(f"{USERS}/{bob}", headers=auth["north-admin"]),
                client.delete(f"{USERS}/{MISSING}", headers=auth["north-admin"]), bob)
    assert client.get("/rest/userInfo", headers=auth["bob"]).status_code == 200
    # alice holds roles north-admin does not hold (sales-reader): it may disable and enable
    # her (that hands no one a right), not change anything else of hers (403)
    alice = demo_id("user", "alice")
    refused = client.put(f"{USERS}/{alice}", headers=auth["north-admin"],
                         json={"active": False, "email": "taken@example.com"})
    assert refused.status_code == 403 and "holds roles you do not hold" in refused.json["details"]
    assert client.get("/rest/userInfo", headers=auth["alice"]).status_code == 200
    switched = client.put(f"{USERS}/{alice}", headers=auth["north-admin"], json={"active": False})
    assert switched.status_code == 200, switched.get_data(as_text=True)
    assert client.get("/rest/userInfo", headers=auth["alice"]).status_code == 401
    assert client.put(f"{USERS}/{alice}", headers=auth["north-admin"],
                      json={"active": True}).status_code == 200
    assert password_grant(client, "alice", "alice-password").status_code == 200


def test_a_tenant_administrator_manages_its_tenants_users_keys(demo):  # noqa: F811
    app, client, auth = demo
    admin = auth["north-admin"]
    assert client.post(USERS, headers=admin, json={"username": "nils"}).status_code == 201
    app.users.set_roles("nils", ["rest-minimal"])
    made = client.post(KEYS, headers=admin, json={"name": "ci", "username": "nils"})
    assert made.status_code == 201, made.get_data(as_text=True)
    assert client.get("/rest/userInfo", headers=bearer(made.json["key"])).json[
        "username"] == "nils"
    listed = client.get(KEYS, headers=admin, query_string={"username": "nils"})
    assert [key["id"] for key in listed.json] == [made.json["id"]]
    bobs = client.post(KEYS, headers=auth["bob"], json={"name": "bobs"}).json["id"]
    for method in (client.get, client.delete):     # bob's key: as a missing one
        same_answer(method(f"{KEYS}/{bobs}", headers=admin),
                    method(f"{KEYS}/{MISSING_KEY}", headers=admin), bobs)
    same_answer(client.get(KEYS, headers=admin, query_string={"username": "bob"}),
                client.get(KEYS, headers=admin, query_string={"username": MISSING}), "bob")
    assert client.delete(f"{KEYS}/{made.json['id']}", headers=admin).status_code == 204
    assert client.get("/rest/userInfo", headers=bearer(made.json["key"])).status_code == 401
    assert client.get(f"{KEYS}/{bobs}", headers=auth["bob"]).status_code == 200   # still there


def test_a_tenant_administrator_makes_no_tenant_and_acts_for_no_other(demo):  # noqa: F811
    _, client, auth = demo
    admin = auth["north-admin"]
    made = client.post("/rest/entities/Tenant", headers=admin,
                       json={"tenantId": "east", "name": "East"})
    assert made.status_code == 403
    assert client.get(USERS, headers={**admin, "X-Tenant-Id": "south"}).status_code == 403
    own = client.get(USERS, headers={**admin, "X-Tenant-Id": "north"})
    assert own.status_code == 200 and "bob" not in {user["username"] for user in own.json}
    tenants = client.get("/rest/entities/Tenant", headers=auth["admin"]).json
    assert sorted(tenant["tenantId"] for tenant in tenants) == ["north", "south"]


def clients_of(tenant):
    prefix = f"svc.authserver.client.{tenant}ern."
    return {f"{prefix}client-id": f"{tenant}ern", f"{prefix}client-secret": "{noop}secret",
            f"{prefix}resource-roles": "rest-minimal, accounts", f"{prefix}tenant": tenant}


def test_a_tenant_administrator_manages_the_keys_of_clients_bound_to_its_tenant(make_app):
    _, client, auth = build(make_app, {**clients_of("north"), **clients_of("south")})
    nadia = auth["nadia"]                   # north's administrator
    made = client.post(KEYS, headers=nadia, json={"name": "n", "clientId": "northern"})
    assert made.status_code == 201, made.get_data(as_text=True)
    listed = client.get(KEYS, headers=nadia, query_string={"clientId": "northern"})
    assert [key["id"] for key in listed.json] == [made.json["id"]]
    assert client.get(f"{KEYS}/{made.json['id']}", headers=nadia).status_code == 200
    southern = client.post(KEYS, headers=auth["root"], json={"name": "s", "clientId": "southern"})
    assert southern.status_code == 201
    theirs = southern.json["id"]
    for method in (client.get, client.delete):
        same_answer(method(f"{KEYS}/{theirs}", headers=nadia),
                    method(f"{KEYS}/{MISSING_KEY}", headers=nadia), theirs)
    same_answer(client.post(KEYS, headers=nadia, json={"name": "s", "clientId": "southern"}),
                client.post(KEYS, headers=nadia, json={"name": "s", "clientId": MISSING}),
                "southern")
    own = bearer(get_token(client, "northern", "secret"))     # the client's own token sees it
    assert [key["id"] for key in client.get(KEYS, headers=own).json] == [made.json["id"]]
    assert client.delete(f"{KEYS}/{made.json['id']}", headers=nadia).status_code == 204
    assert client.get(KEYS, headers=own).json == []
    assert client.get(f"{KEYS}/{theirs}", headers=auth["root"]).status_code == 200
