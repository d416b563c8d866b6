"""API keys made by an administrator (the grant rest.apiKeys.manage) for any
user or for a client, or from the command line; a key's own quota; a key
never in logs, metrics or answers after it is made; the OpenAPI documents."""
import dataclasses
import time

import pytest
from werkzeug.test import Client

from conftest import bearer, get_token, password_grant
from restsvc.demo import application as demo
from restsvc.security import gate
from restsvc.security.roles import ResourceRole

CUSTOMERS = "/rest/entities/Customer?limit=1"
PREFIX = "svc.authserver.client.keys."


def make_key(client, headers, **body):
    answer = client.post("/rest/api-keys", json={"name": "made", **body}, headers=headers)
    assert answer.status_code == 201, answer.json
    return answer.json


def test_an_administrator_makes_lists_and_revokes_any_users_keys(client, auth):
    made = make_key(client, auth, username="alice")
    assert (made["username"], made["createdBy"]) == ("alice", "demo-client")
    key = bearer(made["key"])
    assert client.get("/rest/userInfo", headers=key).json["username"] == "alice"
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=key).status_code == 403          # alice's roles, not the admin's
    alice = bearer(password_grant(client).json["access_token"])
    assert [k["id"] for k in client.get("/rest/api-keys", headers=alice).json] == [made["id"]]
    assert [k["id"] for k in client.get("/rest/api-keys?username=alice",
                                        headers=auth).json] == [made["id"]]
    assert client.get(f"/rest/api-keys/{made['id']}", headers=auth).json["username"] == "alice"
    assert client.get("/rest/api-keys?username=&clientId=reader", headers=auth).json == []
    both = client.get("/rest/api-keys?username=alice&clientId=reader", headers=auth)
    assert both.status_code == 400 and both.json["error"] == "Invalid API key owner"
    assert client.delete(f"/rest/api-keys/{made['id']}", headers=auth).status_code == 204
    assert client.get("/rest/userInfo", headers=key).status_code == 401


def test_a_clients_key_speaks_as_the_client_with_its_roles(client, auth):
    made = make_key(client, auth, clientId="reader")
    assert made["clientId"] == "reader" and "username" not in made
    key = bearer(made["key"])
    assert client.get("/rest/userInfo", headers=key).json["username"] == "reader"
    assert client.get(CUSTOMERS, headers=key).status_code == 200
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=key).status_code == 403
    reader = bearer(get_token(client, "reader", "reader-secret"))
    # The client's own token sees its keys and may revoke them, but makes none.
    assert [k["id"] for k in client.get("/rest/api-keys", headers=reader).json] == [made["id"]]
    assert client.post("/rest/api-keys", json={"name": "x"}, headers=reader).status_code == 403
    assert client.delete(f"/rest/api-keys/{made['id']}", headers=reader).status_code == 204
    assert client.get(CUSTOMERS, headers=key).status_code == 401


def test_the_grant_reaches_only_owners_whose_roles_the_caller_holds(make_app):
    key_admin = ResourceRole("key-admin", specifics=("rest.enabled", "rest.apiKeys.manage"))
    app = make_app({PREFIX + "client-id": "keys", PREFIX + "client-secret": "keys-secret",
                    PREFIX + "authorization-grant-types": "client_credentials",
                    PREFIX + "resource-roles": "rest-minimal, key-admin"},
                   dataclasses.replace(demo, resource_roles=(*demo.resource_roles, key_admin)))
    client = Client(app)
    admin = bearer(get_token(client, "keys", "keys-secret"))
    app.users.add("carol", "carol-password", ("rest-minimal",))
    assert make_key(client, admin, username="carol")["username"] == "carol"
    for owner in ({"username": "alice"}, {"username": "admin"}, {"clientId": "reader"}):
        refused = client.post("/rest/api-keys", json={"name": "x", **owner}, headers=admin)
        assert refused.status_code == 403 and "roles you do not hold" in refused.json["details"]
    assert client.get("/rest/api-keys?username=alice", headers=admin).json == []
    # Without the grant: no one else's keys at all.
    reader = bearer(get_token(client, "reader", "reader-secret"))
    assert client.get("/rest/api-keys?username=carol", headers=reader).status_code == 403


@pytest.fixture
def two_instances(make_app):
    """A key of alice's, then an instance whose settings name its quota."""
    first = Client(make_app())
    alice = bearer(password_grant(first).json["access_token"])
    made = make_key(first, alice)

    class Clock:
        now = 1_000_000.0

        def __call__(self):
            return self.now
    limited = make_app({f"svc.rate-limit.key.{made['id']}": "2/s",
                        "svc.rate-limit.user.alice": "3/s"})
    limited.quotas.clock = Clock()
    return Client(limited), bearer(made["key"]), alice


def test_a_keys_quota_is_its_own_and_leaves_the_users_other_tokens_alone(two_instances):
    client, key, alice = two_instances
    statuses = [client.get(CUSTOMERS, headers=key).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    refused = client.get(CUSTOMERS, headers=key)
    assert refused.headers["RateLimit-Limit"] == "2" and refused.json["error"] == "Too many requests"
    # The key's requests took nothing of alice's own quota (3/s).
    assert [client.get(CUSTOMERS, headers=alice).status_code for _ in range(4)] == \
        [200, 200, 200, 429]
    # Nor does alice's used-up quota hold her key back.
    assert client.get(CUSTOMERS, headers=key).status_code == 429      # still its own


def test_a_key_without_a_quota_counts_as_its_user(make_app):
    client = Client(make_app({"svc.rate-limit.user.alice": "2/s"}))
    key = bearer(make_key(client, bearer(password_grant(client).json["access_token"]))["key"])
    statuses = [client.get(CUSTOMERS, headers=key).status_code for _ in range(3)]
    assert statuses[-1] == 429


def test_a_key_is_never_in_logs_metrics_or_later_answers(make_app, capsys):
    app = make_app({"svc.log.format": "json", "svc.log.requests": True,
                    "svc.metrics.client-label": True})
    client = Client(app)
    made = make_key(client, bearer(password_grant(client).json["access_token"]))
    secret = made["key"]
    key = bearer(secret)
    for path in (CUSTOMERS, "/rest/userInfo", "/rest/api-keys", f"/rest/api-keys/{made['id']}"):
        answer = client.get(path, headers=key)
        assert answer.status_code == 200 and secret[4:] not in answer.get_data(as_text=True)
    client.get("/rest/nowhere", headers=key)
    client.get(CUSTOMERS, headers={"Authorization": f"Bearer {secret}x"})     # a wrong key
    metrics = client.get("/metrics", headers=bearer(get_token(client, "monitor",
                                                              "monitor-secret")))
    app.observer.request_log.flush()
    logged = capsys.readouterr().err
    assert '"client_id": "api-key", "username": "alice"' in logged
    assert 'client="api-key"' in metrics.get_data(as_text=True)
    for text in (logged, metrics.get_data(as_text=True)):
        assert secret[4:] not in text and app.tokens.hash(secret) not in text


def test_the_documents_describe_the_key_requests(client, auth):
    document = client.get("/rest/docs/openapi.json", headers=auth).json
    made = document["paths"]["/rest/api-keys"]["post"]
    assert made["responses"]["201"]["content"]["application/json"]["schema"]["required"][-1] \
        == "key"
    assert set(made["requestBody"]["content"]["application/json"]["schema"]["properties"]) == {
        "name", "expiresIn", "scope", "username", "clientId"}
    assert {"get", "delete"} <= set(document["paths"]["/rest/api-keys/{keyId}"])
    listed = document["paths"]["/rest/api-keys"]["get"]["responses"]["200"]
    assert "key" not in listed["content"]["application/json"]["schema"]["items"]["properties"]


def test_the_command_line_makes_lists_and_revokes_keys(client, run_cli, capsys):
    assert run_cli("key", "create", "--user", "alice", "--name", "nightly export",
                   "--expires", "90d", "--scope", "read") == 0
    out = capsys.readouterr().out
    secret = out.split("key: ", 1)[1].split()[0]
    key_id = out.split("API key ", 1)[1].split()[0]
    key = bearer(secret)
    assert client.get(CUSTOMERS, headers=key).status_code == 200
    assert client.get("/rest/userInfo", headers=key).json["username"] == "alice"
    assert run_cli("key", "list", "--user", "alice") == 0
    listed = capsys.readouterr().out
    assert key_id in listed and "nightly export" in listed and secret[4:] not in listed
    assert run_cli("key", "create", "--client", "reader", "--name", "c", "--scope", "write") == 0
    assert "client reader" in capsys.readouterr().out
    assert run_cli("key", "revoke", key_id) == 0
    assert client.get(CUSTOMERS, headers=key).status_code == 401
    assert run_cli("key", "revoke", key_id) == 1
    assert run_cli("key", "create", "--name", "x") == 1
    assert run_cli("key", "create", "--user", "nobody", "--name", "x") == 1
    assert "User nobody not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", [("passwd", "--password-stdin"), ("disable",)])
def test_a_new_password_or_disabling_on_the_command_line_ends_the_keys(client, run_cli,
                                                                       command):
    key = bearer(make_key(client, bearer(password_grant(client).json["access_token"]))["key"])
    assert client.get(CUSTOMERS, headers=key).status_code == 200
    assert run_cli("user", command[0], "alice", *command[1:],
                   stdin="another-password\n") == 0
    assert client.get(CUSTOMERS, headers=key).status_code in (200, 401)
    # Another process changed the user: this one sees it within its recheck time.
    time.sleep(gate.RECHECK_SECONDS + 0.05)
    assert client.get(CUSTOMERS, headers=key).status_code == 401
