"""The built-in User entity, GET /rest/userInfo, and `restsvc user`."""
from conftest import bearer, password_grant
from restsvc.security.users import User

SECRET_WORDS = ("password", "alice-password", "pbkdf2", "roles", "sales-reader")


def test_user_info_of_a_user_token_shows_the_user_without_secrets(client, alice_auth):
    response = client.get("/rest/userInfo", headers=alice_auth)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json;charset=UTF-8"
    body = response.json
    assert body["username"] == "alice" and body["locale"] == "de"
    attributes = body["attributes"]
    assert set(attributes) == {"id", "version", "username", "firstName", "lastName", "email",
                               "active", "locale"}
    assert attributes["email"] == "alice.adler@example.com" and attributes["active"] is True
    text = response.get_data(as_text=True)
    assert not any(word in text for word in SECRET_WORDS)


def test_user_info_of_a_client_token_names_the_client(client, auth):
    body = client.get("/rest/userInfo", headers=auth).json
    assert body == {"username": "demo-client", "locale": "en", "attributes": {}}


def test_user_info_locale_falls_back_to_the_default_for_an_unavailable_one(client):
    User.update(locale="fr").where(User.username == "alice").execute()
    token = password_grant(client).json["access_token"]
    assert client.get("/rest/userInfo", headers=bearer(token)).json["locale"] == "en"


def test_a_user_tokens_locale_chooses_the_messages_language(client, alice_auth):
    body = client.get("/rest/messages/entities/Order", headers=alice_auth).json
    assert body["Order"] == "Bestellung"
    english = client.get("/rest/messages/entities/Order", headers={**alice_auth,
                                                                   "Accept-Language": "en"})
    assert english.json["Order"] == "Order"


def test_user_metadata_hides_the_password_and_roles(client, auth):
    body = client.get("/rest/metadata/entities/User", headers=auth).json
    names = [p["name"] for p in body["properties"]]
    assert names == ["id", "version", "username", "firstName", "lastName", "email", "active",
                     "locale"]


def test_the_stored_password_is_a_salted_slow_hash(app):
    stored = User.get(User.username == "alice").password
    assert stored.startswith("{pbkdf2-sha256}") and "alice-password" not in stored


def test_saving_a_user_as_inactive_revokes_its_tokens(client, alice_auth):
    # What the data manager does on PUT /rest/entities/User/<id> {"active": false}.
    user = User.get(User.username == "alice")
    user.active = False
    user.save()
    user.after_save(created=False)
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_deleting_a_user_revokes_its_tokens(client, alice_auth):
    user = User.get(User.username == "alice")
    user.delete_instance()
    user.after_delete()
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_a_renamed_user_keeps_its_tokens_in_step(client, alice_auth):
    user = User.get(User.username == "alice")
    user.username, user.locale = "alice2", "en"
    user.save()
    user.after_save(created=False)
    body = client.get("/rest/userInfo", headers=alice_auth).json
    assert (body["username"], body["locale"]) == ("alice2", "en")

