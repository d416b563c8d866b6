"""Whose tenant a token speaks for (restsvc/docs/tenants.md "Who belongs to
a tenant"): a user's, a client's of the settings, an API key's owner's, an
identity provider's claim; a global administrator makes a tenant's user."""
import pytest
from werkzeug.test import Client

from conftest import bearer, get_token, password_grant
from tenant_app import APPLICATION, PASSWORD, build

jwt = pytest.importorskip("jwt", reason="PyJWT is not installed (pip install 'restsvc[jwt]')")
from test_jwt_tokens import idp, jwt_settings  # noqa: E402,F401  (the identity provider fixture)

ACCOUNTS = "/rest/entities/Account"
CLIENT = "svc.authserver.client.northern."


@pytest.fixture
def world(make_app):
    app, client, auth = build(make_app, {
        f"{CLIENT}client-id": "northern", f"{CLIENT}client-secret": "{noop}northern-secret",
        f"{CLIENT}resource-roles": "rest-minimal, accounts", f"{CLIENT}tenant": "north"})
    for user, name in (("nora", "North"), ("sam", "South")):
        answer = client.post(ACCOUNTS, headers=auth[user], json={
            "name": name, "email": f"{name.lower()}@example.com"})
        assert answer.status_code == 201
    return app, client, auth


def names(client, headers):
    answer = client.get(ACCOUNTS, headers=headers)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return [row["name"] for row in answer.json]


def test_a_client_bound_to_a_tenant_acts_for_it(world):
    _, client, _ = world
    northern = bearer(get_token(client, "northern", "northern-secret"))
    assert names(client, northern) == ["North"]
    created = client.post(ACCOUNTS, headers=northern, json={"name": "N2", "email": "n2@x.io"})
    assert created.status_code == 201 and created.json.get("tenantId", "north") == "north"


def test_an_api_key_acts_for_its_users_tenant(world):
    _, client, auth = world
    made = client.post("/rest/api-keys", json={"name": "ci"}, headers=auth["sam"])
    assert made.status_code == 201, made.get_data(as_text=True)
    assert names(client, bearer(made.json["key"])) == ["South"]


def test_a_global_administrator_makes_a_tenants_user(world):
    app, client, auth = world
    made = client.post("/rest/entities/User", headers=auth["root"], json={
        "username": "nils", "tenantId": "north"})
    assert made.status_code == 201, made.get_data(as_text=True)
    app.users.set_password("nils", PASSWORD)
    app.users.set_roles("nils", ["rest-minimal", "accounts"])
    token = password_grant(client, "nils", PASSWORD).json["access_token"]
    assert names(client, bearer(token)) == ["North"]
    unknown = client.post("/rest/entities/User", headers=auth["root"], json={
        "username": "nobody", "tenantId": "west"})
    assert unknown.status_code == 400


def test_a_tenant_user_sees_its_tenants_users_only(world):
    _, client, auth = world
    users = {user["username"] for user in client.get("/rest/entities/User",
                                                     headers=auth["nadia"]).json}
    assert users == {"nadia", "nora", "alice", "north-admin"}    # and the demo's of north
    tenants = client.get("/rest/entities/Tenant", headers=auth["root"]).json
    assert sorted(tenant["tenantId"] for tenant in tenants) == ["north", "south"]


def test_an_identity_providers_claim_names_the_tenant(make_app, idp):  # noqa: F811
    app = make_app(jwt_settings(idp, **{"tenant-claim": "org.tenant"}), application=APPLICATION)
    client = Client(app)
    admin = bearer(idp.token(realm_access={"roles": ["admins"]}))
    assert client.post("/rest/entities/Tenant", headers=admin, json={
        "tenantId": "east", "name": "East"}).status_code == 201
    for key in ("north", "south"):      # the demo's tenants
        assert client.post(ACCOUNTS, headers=admin, json={
            "name": key, "email": "a@example.com", "tenantId": key}).status_code == 201
    south = bearer(idp.token(realm_access={"roles": ["admins"]}, org={"tenant": "south"}))
    assert names(client, south) == ["south"]
    assert sorted(names(client, admin)) == ["north", "south"]
    west = bearer(idp.token(realm_access={"roles": ["admins"]}, org={"tenant": "west"}))
    assert client.get(ACCOUNTS, headers=west).status_code == 401


def test_a_tenant_administrator_manages_its_tenants_api_keys_only(world):
    _, client, auth = world
    for_nora = client.post("/rest/api-keys", headers=auth["nadia"],
                           json={"name": "n", "username": "nora"})
    assert for_nora.status_code == 201, for_nora.get_data(as_text=True)
    for_sam = client.post("/rest/api-keys", headers=auth["nadia"],
                          json={"name": "s", "username": "sam"})
    nobody = client.post("/rest/api-keys", headers=auth["nadia"],
                         json={"name": "s", "username": "nobody-at-all"})
    assert for_sam.status_code == nobody.status_code == 404
    assert for_sam.json["error"] == nobody.json["error"]
    sams = client.post("/rest/api-keys", headers=auth["sam"], json={"name": "mine"}).json
    listed = client.get("/rest/api-keys", headers=auth["nadia"], query_string={"username": "sam"})
    assert listed.status_code == 404
    assert client.get(f"/rest/api-keys/{sams['id']}", headers=auth["nadia"]).status_code == 404
    assert client.delete(f"/rest/api-keys/{sams['id']}", headers=auth["nadia"]).status_code == 404
    assert client.get(f"/rest/api-keys/{for_nora.json['id']}",
                      headers=auth["nadia"]).status_code == 200
    assert client.get(f"/rest/api-keys/{sams['id']}", headers=auth["root"]).status_code == 200


def test_a_tenants_callers_share_its_quota(make_app):
    _, client, auth = build(make_app, {"svc.rate-limit.tenant.north": "3/min"})
    statuses = [client.get(ACCOUNTS, headers=auth[user]).status_code
                for user in ("nora", "nadia", "nora", "nadia")]
    assert statuses == [200, 200, 200, 429]
    assert client.get(ACCOUNTS, headers=auth["sam"]).status_code == 200      # south's own
    assert client.get(ACCOUNTS, headers=auth["root"]).status_code == 200     # global


def test_a_tenants_quota_counts_its_api_keys_and_bound_clients_too(make_app):
    _, client, auth = build(make_app, {
        f"{CLIENT}client-id": "northern", f"{CLIENT}client-secret": "{noop}northern-secret",
        f"{CLIENT}resource-roles": "rest-minimal, accounts", f"{CLIENT}tenant": "north",
        "svc.rate-limit.tenant.north": "3/min"})
    made = client.post("/rest/api-keys", json={"name": "ci"}, headers=auth["nora"])   # one
    assert made.status_code == 201, made.get_data(as_text=True)
    northern = bearer(get_token(client, "northern", "northern-secret"))
    statuses = [client.get(ACCOUNTS, headers=headers).status_code
                for headers in (bearer(made.json["key"]), northern, auth["nadia"])]
    assert statuses == [200, 200, 429]
    refused = client.get(ACCOUNTS, headers=northern)
    assert refused.status_code == 429 and refused.headers["RateLimit-Limit"] == "3"
    assert client.get(ACCOUNTS, headers=auth["sam"]).status_code == 200      # south's own


def test_an_identity_providers_subject_keeps_idempotency_keys_apart_by_tenant(
        make_app, idp):  # noqa: F811
    app = make_app(jwt_settings(idp, **{"tenant-claim": "org.tenant"}), application=APPLICATION)
    client = Client(app)
    answers = [client.post(ACCOUNTS, json={"name": "A", "email": "a@example.com"}, headers={
        **bearer(idp.token(realm_access={"roles": ["admins"]}, org={"tenant": key})),
        "Idempotency-Key": "same"}) for key in ("north", "south", "south")]
    assert [answer.status_code for answer in answers] == [201, 201, 201]
    assert answers[0].json["id"] != answers[1].json["id"] == answers[2].json["id"]
    assert answers[2].headers.get("Idempotent-Replayed") == "true"
