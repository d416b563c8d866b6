"""API keys (personal access tokens): a user makes them, sees the secret once,
uses them as bearer tokens exactly like access tokens, lists and revokes them;
they end with a new password or a disabled user; their last use is written
at most once a minute, after the answer (restsvc/docs/apikeys.md)."""
import json

import pytest
from werkzeug.test import Client

from conftest import basic, bearer, password_grant
from restsvc.security import apikeys, gate

CUSTOMERS = "/rest/entities/Customer?limit=2"
PREFIX = "svc.authserver.client.job."


def sign_in(client, username="alice", password=None):
    answer = password_grant(client, username, password or f"{username}-password")
    assert answer.status_code == 200, answer.json
    return bearer(answer.json["access_token"])


def make_key(client, headers, **body):
    answer = client.post("/rest/api-keys", json={"name": "ci", **body}, headers=headers)
    assert answer.status_code == 201, answer.json
    return answer.json


def user_id(client, auth, username):
    found = client.get("/rest/entities/User/search", headers=auth, query_string={
        "filter": json.dumps({"conditions": [
            {"property": "username", "operator": "=", "value": username}]})})
    return found.json[0]["id"]


def test_a_key_answers_exactly_what_the_users_access_token_answers(client):
    alice = sign_in(client)
    made = make_key(client, alice)
    assert made["key"].startswith("rsk_") and made["username"] == "alice"
    assert made["scope"] is None and made["expiresAt"] is None and made["lastUsedAt"] is None
    key = bearer(made["key"])
    for path in (CUSTOMERS, "/rest/userInfo", "/rest/permissions"):
        with_token, with_key = client.get(path, headers=alice), client.get(path, headers=key)
        assert (with_key.status_code, with_key.json) == (with_token.status_code, with_token.json)
    # Alice's roles read and never write, whichever token she sends.
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=key).status_code == 403


def test_the_secret_is_shown_once_and_stored_only_as_a_hash(app, client):
    alice = sign_in(client)
    made = make_key(client, alice, expiresIn="30d")
    secret = made["key"]
    listed = client.get("/rest/api-keys", headers=alice)
    one = client.get(f"/rest/api-keys/{made['id']}", headers=alice)
    assert [item["id"] for item in listed.json] == [made["id"]]
    assert one.json == {name: value for name, value in made.items() if name != "key"}
    assert one.headers["Cache-Control"] == "no-store"
    for text in (listed.get_data(as_text=True), one.get_data(as_text=True)):
        assert secret[4:] not in text and app.tokens.hash(secret) not in text
    stored = repr(app.database.execute_sql("SELECT * FROM restsvc_api_key").fetchall())
    assert secret[4:] not in stored and app.tokens.hash(secret) in stored


def test_a_key_of_a_disabled_user_is_refused_401(client, auth):
    key = bearer(make_key(client, sign_in(client))["key"])
    assert client.get(CUSTOMERS, headers=key).status_code == 200        # now remembered
    changed = client.put(f"/rest/entities/User/{user_id(client, auth, 'alice')}",
                         json={"active": False}, headers=auth)
    assert changed.status_code == 200, changed.json
    refused = client.get(CUSTOMERS, headers=key)
    assert refused.status_code == 401 and "invalid_token" in refused.headers["WWW-Authenticate"]
    # Enabled again, the user signs in anew; the key stays revoked.
    client.put(f"/rest/entities/User/{user_id(client, auth, 'alice')}", json={"active": True},
               headers=auth)
    assert client.get(CUSTOMERS, headers=key).status_code == 401


def test_a_new_password_revokes_the_users_keys_and_no_one_elses(app, client):
    alice = bearer(make_key(client, sign_in(client))["key"])
    admin = bearer(make_key(client, sign_in(client, "admin"))["key"])
    assert client.get(CUSTOMERS, headers=alice).status_code == 200
    app.users.set_password("alice", "a-new-password")
    assert client.get(CUSTOMERS, headers=alice).status_code == 401
    assert client.get(CUSTOMERS, headers=admin).status_code == 200


def test_deleting_the_user_revokes_its_keys(app, client, auth):
    app.users.add("carol", "carol-password", ("rest-minimal",))
    key = bearer(make_key(client, sign_in(client, "carol"))["key"])
    assert client.get("/rest/userInfo", headers=key).json["username"] == "carol"
    assert client.delete(f"/rest/entities/User/{user_id(client, auth, 'carol')}",
                         headers=auth).status_code == 204
    assert client.get("/rest/userInfo", headers=key).status_code == 401
    assert app.database.execute_sql("SELECT COUNT(*) FROM restsvc_api_key").fetchone()[0] == 0


def test_a_key_follows_its_users_roles_and_name(app, client, auth, monkeypatch):
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 0)        # each request reads the key
    key = bearer(make_key(client, sign_in(client))["key"])
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=key).status_code == 403
    user = app.users.get("alice")
    user.roles = "rest-minimal,system-full-access"
    user.save()
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=key).status_code == 201
    renamed = client.put(f"/rest/entities/User/{user.id}", json={"username": "alicia"},
                         headers=auth)
    assert renamed.status_code == 200, renamed.json
    assert client.get("/rest/userInfo", headers=key).json["username"] == "alicia"


def test_a_revoked_key_is_refused_at_once(client):
    alice = sign_in(client)
    made = make_key(client, alice)
    key = bearer(made["key"])
    assert client.get(CUSTOMERS, headers=key).status_code == 200
    assert client.delete(f"/rest/api-keys/{made['id']}", headers=alice).status_code == 204
    assert client.get(CUSTOMERS, headers=key).status_code == 401
    assert client.get(f"/rest/api-keys/{made['id']}", headers=alice).status_code == 404
    assert client.get("/rest/api-keys", headers=alice).json == []


def test_a_key_revokes_itself_but_cannot_make_keys(client):
    made = make_key(client, sign_in(client))
    key = bearer(made["key"])
    refused = client.post("/rest/api-keys", json={"name": "more"}, headers=key)
    assert refused.status_code == 403 and "cannot make" in refused.json["details"]
    assert [item["id"] for item in client.get("/rest/api-keys", headers=key).json] == [made["id"]]
    assert client.delete(f"/rest/api-keys/{made['id']}", headers=key).status_code == 204
    assert client.get(CUSTOMERS, headers=key).status_code == 401


def test_another_users_key_is_not_found_by_a_user(app, client):
    made = make_key(client, sign_in(client))
    app.users.add("carol", "carol-password", ("rest-minimal",))
    carol = sign_in(client, "carol")
    assert client.get(f"/rest/api-keys/{made['id']}", headers=carol).status_code == 404
    assert client.delete(f"/rest/api-keys/{made['id']}", headers=carol).status_code == 404
    assert client.get("/rest/api-keys", headers=carol).json == []
    assert client.get("/rest/api-keys?username=alice", headers=carol).status_code == 403
    assert client.post("/rest/api-keys", json={"name": "x", "username": "alice"},
                       headers=carol).status_code == 403
    assert client.get(CUSTOMERS, headers=bearer(made["key"])).status_code == 200


def test_an_expired_key_is_refused(app, client):
    made = make_key(client, sign_in(client), expiresIn=3600)
    app.database.execute_sql("UPDATE restsvc_api_key SET expires_at = 1")
    assert client.get(CUSTOMERS, headers=bearer(made["key"])).status_code == 401


@pytest.mark.parametrize(("body", "status", "says"), [
    ({}, 400, "name"), ({"name": ""}, 400, "name"), ({"name": "x" * 101}, 400, "name"),
    ({"name": "a\nb"}, 400, "name"), ({"name": "k", "expiresIn": "soon"}, 400, "expiresIn"),
    ({"name": "k", "expiresIn": 0}, 400, "expiresIn"),
    ({"name": "k", "expiresIn": "3651d"}, 400, "expiresIn"),
    ({"name": "k", "scope": "admin"}, 400, "scope"), ({"name": "k", "scope": 3}, 400, "scope"),
    ({"name": "k", "username": "alice", "clientId": "reader"}, 400, "not both"),
    ({"name": "k", "clientId": "nobody"}, 404, "not registered"),
    ({"name": "k", "username": "nobody"}, 404, "not found"),
    ([1], 400, "JSON object"),
])
def test_bad_requests_for_a_key_are_clear_4xx(client, auth, body, status, says):
    answer = client.post("/rest/api-keys", json=body, headers=auth)
    assert answer.status_code == status and says in answer.json["details"], answer.json


def test_a_keys_scope_narrows_it_and_never_exceeds_the_token_that_made_it(make_app):
    client = Client(make_app({PREFIX + "client-id": "job", PREFIX + "client-secret": "job-secret",
                              PREFIX + "authorization-grant-types": "password",
                              PREFIX + "resource-roles": "rest-minimal",
                              PREFIX + "scopes": "read, write"}))

    def admin_token(scope):
        answer = client.post("/oauth2/token", headers={"Authorization": basic("job", "job-secret")},
                             data={"grant_type": "password", "username": "admin",
                                   "password": "admin-password", "scope": scope})
        return bearer(answer.json["access_token"])
    full, write = admin_token("read write"), admin_token("write")
    read_key = bearer(make_key(client, full, scope="read")["key"])
    assert client.get(CUSTOMERS, headers=read_key).status_code == 200
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=read_key).status_code == 403
    write_key = make_key(client, write)
    assert write_key["scope"] == "write"
    assert client.get(CUSTOMERS, headers=bearer(write_key["key"])).status_code == 403
    assert client.post("/rest/entities/Customer", json={"name": "N"},
                       headers=bearer(write_key["key"])).status_code == 201
    wider = client.post("/rest/api-keys", json={"name": "k", "scope": "read write"}, headers=write)
    assert wider.status_code == 400 and "more than the token holds" in wider.json["details"]
    # A read token makes no key: making one writes.
    assert client.post("/rest/api-keys", json={"name": "k"},
                       headers=admin_token("read")).status_code == 403


class Clock:
    def __init__(self):
        self.now = 2_000_000_000.0

    def time(self):
        return self.now


def test_the_last_use_is_written_after_the_answer_at_most_once_a_minute(make_app, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(apikeys, "time", clock)
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 0)        # each request reads the key
    first, second = make_app(), make_app()
    one, two = Client(first), Client(second)
    made = make_key(one, sign_in(one))
    key = bearer(made["key"])

    def last_use():
        return one.get(f"/rest/api-keys/{made['id']}", headers=key, buffered=True).json[
            "lastUsedAt"]
    answer = one.get(CUSTOMERS, headers=key)                # not closed: the answer is not out
    assert answer.status_code == 200 and first.keys.pending
    assert first.database.execute_sql("SELECT last_used_at FROM restsvc_api_key"
                                      ).fetchone()[0] is None
    answer.close()                                          # out: now it is written
    assert not first.keys.pending and last_use() == "2033-05-18T03:33:20.000Z"
    clock.now += 59
    for client in (one, two, one):
        client.get(CUSTOMERS, headers=key, buffered=True)
    assert last_use() == "2033-05-18T03:33:20.000Z"
    assert not first.keys.pending and not second.keys.pending
    clock.now += 61
    one.get(CUSTOMERS, headers=key)                         # both processes see it due,
    two.get(CUSTOMERS, headers=key)
    assert first.keys.record_uses() + second.keys.record_uses() == 1    # one writes it
    assert last_use() == "2033-05-18T03:35:20.000Z"


def test_a_key_opens_the_change_feed_with_a_stream_ticket_as_a_token_does(client, monkeypatch):
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 0)        # the ticket's hash is read again
    alice = sign_in(client)
    made = make_key(client, alice)
    ticket = client.post("/rest/events/tickets", headers=bearer(made["key"]))
    assert ticket.status_code == 200, ticket.json
    stream = client.get("/rest/events/stream", buffered=False,
                        query_string={"ticket": ticket.json["ticket"], "entity": "Customer"})
    assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
    stream.close()
    client.delete(f"/rest/api-keys/{made['id']}", headers=alice)
    assert client.get("/rest/events/stream", query_string={
        "ticket": ticket.json["ticket"]}).status_code == 401


def test_an_expired_key_stays_listed_until_its_owner_makes_a_new_one(app, client):
    alice = sign_in(client)
    expired = make_key(client, alice, expiresIn=60)
    app.database.execute_sql("UPDATE restsvc_api_key SET expires_at = 1")
    assert [k["id"] for k in client.get("/rest/api-keys", headers=alice).json] == [expired["id"]]
    fresh = make_key(client, alice)
    assert [k["id"] for k in client.get("/rest/api-keys", headers=alice).json] == [fresh["id"]]
    longer = f"/rest/api-keys/{fresh['id']}x"
    assert client.get(longer, headers=alice).status_code == 404


def test_an_owner_has_a_bounded_number_of_keys(client, monkeypatch):
    monkeypatch.setattr(apikeys, "MAX_KEYS", 2)
    alice = sign_in(client)
    make_key(client, alice), make_key(client, alice)
    refused = client.post("/rest/api-keys", json={"name": "third"}, headers=alice)
    assert refused.status_code == 409 and refused.json["error"] == "Too many API keys"
