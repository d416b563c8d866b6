"""Users through the entities API: the service assigns their ids, and a
username has one canonical form (NFKC, trimmed) without invisible characters."""
import pytest

from conftest import bearer, demo_id, password_grant

NIL = "00000000-0000-0000-0000-000000000000"
USERS = "/rest/entities/User"
INVALID = "{restsvc.validation.InvalidValue}"


def usernames(client, auth):
    return sorted(user["username"] for user in client.get(USERS, headers=auth).json)


def test_a_new_user_may_not_bring_the_nil_id_of_client_tokens(client, auth):
    before = usernames(client, auth)
    response = client.post(USERS, json={"id": NIL, "username": "nobody"}, headers=auth)
    assert response.status_code == 400
    assert response.json == [{"message": "must not be set: the service assigns the ids of users",
                              "messageTemplate": INVALID, "path": "id", "invalidValue": NIL}]
    assert usernames(client, auth) == before


def test_a_deleted_users_id_is_never_given_again(client, auth):
    alice = demo_id("user", "alice")
    assert client.delete(f"{USERS}/{alice}", headers=auth).status_code == 204
    response = client.post(USERS, json=[{"id": alice, "username": "alice"}], headers=auth)
    assert response.status_code == 400
    assert response.json[0]["path"] == "entities[0].id"
    assert client.get(f"{USERS}/{alice}", headers=auth).status_code == 404


def test_a_user_created_without_an_id_gets_one_and_an_upsert_of_a_stored_user_updates_it(
        client, auth):
    created = client.post(USERS, json={"username": "carol"}, headers=auth)
    assert created.status_code == 201 and created.json["id"] != NIL
    alice = demo_id("user", "alice")
    response = client.post(USERS, json={"id": alice, "firstName": "Alicia"}, headers=auth)
    assert response.status_code in (200, 201)
    assert client.get(f"{USERS}/{alice}", headers=auth).json["firstName"] == "Alicia"


@pytest.mark.parametrize("name", ["admin ", " admin", "\uff41dmin", "\uff41dmin "])
def test_a_look_alike_of_an_existing_username_is_refused(client, auth, name):
    before = usernames(client, auth)
    response = client.post(USERS, json={"username": name}, headers=auth)
    assert response.status_code == 400
    assert usernames(client, auth) == before


@pytest.mark.parametrize("name", ["\u200badmin", "ad\u00admin", "admin\u2060", "bob\nsmith",
                                  "\u3164", "   "])
def test_a_username_with_invisible_or_control_characters_is_a_validation_error(client, auth, name):
    before = usernames(client, auth)
    response = client.post(USERS, json={"username": name}, headers=auth)
    assert response.status_code == 400
    [violation] = response.json
    assert violation["path"] == "username" and violation["messageTemplate"] == INVALID
    assert usernames(client, auth) == before
    rename = client.put(f"{USERS}/{demo_id('user', 'alice')}", json={"username": name},
                        headers=auth)
    assert rename.status_code == 400 and rename.json[0]["path"] == "username"


def test_a_username_is_stored_in_its_canonical_form(client, auth):
    response = client.post(USERS, json={"username": "  \uff22ob\u3000 Smith "}, headers=auth)
    assert response.status_code == 201
    assert response.json["_instanceName"] == "Bob Smith"
    assert "Bob Smith" in usernames(client, auth)


def test_sign_in_looks_a_user_up_by_the_canonical_name(client):
    response = password_grant(client, username=" \uff41lice ")
    assert response.status_code == 200
    info = client.get("/rest/userInfo", headers=bearer(response.json["access_token"])).json
    assert info["username"] == "alice"
    assert password_grant(client, username="\u200balice").status_code == 400
