"""The built-in User entity, GET /rest/userInfo, and `restsvc user`."""
import pytest

from conftest import basic, bearer, password_grant
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
                               "active", "locale", "tenantId"}
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
                     "locale", "tenantId"]


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
    user.id = str(user.id).upper()       # however the caller spells the id
    user.after_delete()
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_a_new_locale_keeps_a_users_tokens_in_step(client, alice_auth):
    user = User.get(User.username == "alice")
    user.locale = "en"
    user.save()
    user.after_save(created=False)
    body = client.get("/rest/userInfo", headers=alice_auth).json
    assert (body["username"], body["locale"]) == ("alice", "en")


# --- restsvc user ------------------------------------------------------------

def test_cli_user_add_creates_a_user_who_can_sign_in(client, run_cli, capsys):
    assert run_cli("user", "add", "bert", "--role", "rest-minimal", "--role", "sales-reader",
                   "--password-stdin", stdin="berts-password\n") == 0
    out, err = capsys.readouterr()
    assert "bert" in out and "berts-password" not in out + err
    response = password_grant(client, "bert", "berts-password")
    assert response.status_code == 200
    permissions = client.get("/rest/permissions", headers=bearer(response.json["access_token"]))
    assert permissions.json["authorities"] == ["ROLE_rest-minimal", "ROLE_sales-reader"]


@pytest.mark.parametrize("args, stdin, message", [
    (("alice",), "long-enough\n", "User exists"),
    (("bert", "--role", "no-such-role"), "long-enough\n", "Unknown role"),
    (("bert",), "short\n", "Invalid password"),
    (("\uff41lice",), "long-enough\n", "User exists"),         # fullwidth a: a look-alike
    (("\u200bbob",), "long-enough\n", "Invalid username"),     # zero-width space
    (("bob\tsmith",), "long-enough\n", "Invalid username"),
])
def test_cli_user_add_refuses_bad_input_without_a_traceback(run_cli, capsys, args, stdin, message):
    assert run_cli("user", "add", *args, "--password-stdin", stdin=stdin) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_user_disable_revokes_existing_tokens_at_once(client, run_cli, alice_auth):
    refresh_token = password_grant(client).json["refresh_token"]
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 200
    assert run_cli("user", "disable", "alice") == 0
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401
    refreshed = client.post("/oauth2/token", data={"grant_type": "refresh_token",
                                                   "refresh_token": refresh_token},
                            headers={"Authorization": basic("demo-client", "demo-secret")})
    assert refreshed.json["error"] == "invalid_grant"
    assert password_grant(client).json["error"] == "invalid_grant"
    assert run_cli("user", "enable", "alice") == 0
    assert password_grant(client).status_code == 200


def test_cli_user_passwd_changes_the_password_and_ends_sign_ins(client, run_cli, alice_auth,
                                                                capsys):
    assert run_cli("user", "passwd", "alice", "--password-stdin", stdin="a-new-secret\n") == 0
    assert "a-new-secret" not in "".join(capsys.readouterr())
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401
    assert password_grant(client).status_code == 400
    assert password_grant(client, password="a-new-secret").status_code == 200


def test_cli_user_roles_replaces_the_roles_and_ends_sign_ins(client, run_cli, alice_auth):
    assert run_cli("user", "roles", "alice", "rest-minimal", "user-management") == 0
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401
    token = password_grant(client).json["access_token"]
    body = client.get("/rest/permissions", headers=bearer(token)).json
    assert body["authorities"] == ["ROLE_rest-minimal", "ROLE_user-management"]
    assert run_cli("user", "roles", "alice", "no-such-role") == 1


def test_cli_user_commands_on_an_unknown_user_fail_cleanly(run_cli, capsys):
    assert run_cli("user", "disable", "nobody") == 1
    assert "User not found" in capsys.readouterr().err
