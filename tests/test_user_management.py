"""The user-management role cannot reach above its holder's own roles."""
import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant

MANAGER_ROLES = ("rest-minimal", "user-management")


@pytest.fixture
def manager(app, client):
    """A signed-in user manager: (its id, its Authorization headers)."""
    user = app.users.add("manager", "manager-password", MANAGER_ROLES)
    response = password_grant(client, "manager", "manager-password")
    assert response.status_code == 200, response.get_data(as_text=True)
    return str(user.id), bearer(response.json["access_token"])


@pytest.fixture
def bert(app):
    """A user whose roles the manager holds too."""
    app.users.add("bert", "bert-password", ("rest-minimal",))
    return str(app.users.get("bert").id)


def user_path(user_id):
    return f"/rest/entities/User/{user_id}"


ADMIN = demo_id("user", "admin")


def test_a_manager_cannot_disable_or_delete_a_user_with_roles_it_lacks(client, manager):
    _, headers = manager
    response = client.put(user_path(ADMIN), json={"active": False}, headers=headers)
    assert response.status_code == 403
    assert response.json == {"error": "Forbidden",
                             "details": "User admin holds roles you do not hold"}
    assert client.delete(user_path(ADMIN), headers=headers).status_code == 403
    assert client.delete("/rest/entities/User", json=[ADMIN], headers=headers).status_code == 403
    # neither through an upsert by id
    assert client.post("/rest/entities/User", json={"id": ADMIN, "username": "admin",
                                                    "active": False},
                       headers=headers).status_code == 403
    assert password_grant(client, "admin", "admin-password").status_code == 200


def test_a_manager_cannot_rename_itself(client, manager):
    own_id, headers = manager
    response = client.put(user_path(own_id), json={"username": "admin@example.com"},
                          headers=headers)
    assert response.status_code == 403
    assert response.json["details"] == "You may not change your own username"
    assert client.get("/rest/userInfo", headers=headers).json["username"] == "manager"
    # other attributes of its own are fine
    assert client.put(user_path(own_id), json={"firstName": "Max"},
                      headers=headers).status_code == 200


def test_a_manager_manages_users_whose_roles_it_holds(client, manager, bert):
    _, headers = manager
    assert client.put(user_path(bert), json={"active": False}, headers=headers).status_code == 200
    assert password_grant(client, "bert", "bert-password").status_code == 400
    assert client.delete(user_path(bert), headers=headers).status_code == 204


def test_renaming_a_user_ends_its_sign_ins(client, auth, manager, bert):
    _, headers = manager
    signed_in = bearer(password_grant(client, "bert", "bert-password").json["access_token"])
    assert client.put(user_path(bert), json={"username": "bobby"},
                      headers=headers).status_code == 200
    assert client.get("/rest/userInfo", headers=signed_in).status_code == 401
    assert password_grant(client, "bobby", "bert-password").status_code == 200


def test_full_access_may_change_any_user(client, auth, alice_auth):
    alice = demo_id("user", "alice")
    assert client.put(user_path(alice), json={"username": "alice2"},
                      headers=auth).status_code == 200
    assert client.get("/rest/userInfo", headers=alice_auth).status_code == 401


def test_own_orders_keys_on_the_user_id_so_a_new_username_reaches_no_other_rows(app, client,
                                                                               auth):
    alice_id = demo_id("user", "alice")
    client.put(f"/rest/entities/Customer/{demo_id('customer', 0)}", json={"userId": alice_id},
               headers=auth)
    app.users.set_roles("alice", ("rest-minimal", "sales-reader", "own-orders"))
    alice = bearer(password_grant(client).json["access_token"])
    orders = client.get("/rest/entities/Order?fetchPlan=order-with-details", headers=alice).json
    assert {order["customer"]["name"] for order in orders} == {"Alice Adler"}
    assert len(orders) == 3
    # renamed to another customer's email, alice still sees only her own orders
    client.put(user_path(alice_id), json={"username": "bruno.berg@example.com"}, headers=auth)
    renamed = bearer(password_grant(client, "bruno.berg@example.com").json["access_token"])
    again = client.get("/rest/entities/Order", headers=renamed).json
    assert sorted(o["id"] for o in again) == sorted(o["id"] for o in orders)


def test_a_client_token_with_own_orders_sees_no_orders(make_app):
    c = Client(make_app({"svc.authserver.client.reader.row-level-roles": "own-orders"}))
    reader = bearer(get_token(c, "reader", "reader-secret"))
    response = c.get("/rest/entities/Order", headers=reader)
    assert (response.status_code, response.json) == (200, [])
