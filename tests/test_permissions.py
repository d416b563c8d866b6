"""GET /rest/permissions: roles and policies as a caller sees them."""
from dataclasses import replace

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant
from restsvc import ResourceRole
from restsvc.demo import application as demo


def values(body, key):
    return {item["target"]: item["value"] for item in body[key]}


def token_of(client, kind):
    if kind == "reader client":
        return get_token(client, "reader", "reader-secret")
    return password_grant(client).json["access_token"]


@pytest.mark.parametrize("kind", ["reader client", "alice"])
def test_sales_reader_permissions(client, kind):
    response = client.get("/rest/permissions", headers=bearer(token_of(client, kind)))
    assert response.status_code == 200
    body = response.json
    entities, attributes = values(body, "entities"), values(body, "entityAttributes")
    specifics = values(body, "specifics")
    for entity in ("Customer", "Order", "OrderLine", "Product"):
        assert entities[f"{entity}:read"] == 1
        for operation in ("create", "update", "delete"):
            assert entities[f"{entity}:{operation}"] == 0
    assert all(entities[f"User:{op}"] == 0 for op in ("create", "read", "update", "delete"))
    assert attributes["Customer:email"] == 0
    assert attributes["Customer:name"] == 1
    assert attributes["Product:price"] == 1
    assert attributes["User:username"] == 0
    assert specifics == {"rest.enabled": 1, "rest.fileUpload.enabled": 0,
                         "rest.fileDownload.enabled": 1, "reports.rest.enabled": 1,
                         "rest.deleted.read": 0, "rest.deleted.restore": 0,
                         "rest.deleted.purge": 0, "tenants.actFor": 0}
    assert body["authorities"] == ["ROLE_rest-minimal", "ROLE_sales-reader",
                                   "ROW_LEVEL_ROLE_public-tags"]


def test_permissions_list_every_entity_operation_and_attribute(client, auth):
    body = client.get("/rest/permissions", headers=auth).json
    entities, attributes = values(body, "entities"), values(body, "entityAttributes")
    assert len(entities) == 4 * 9            # User, Tenant, HistoryItem and the six demo entities
    assert all(entities[f"Tenant:{op}"] == 1 for op in ("create", "read", "update", "delete"))
    assert {k: v for k, v in entities.items() if k.startswith("HistoryItem:")} == {
        "HistoryItem:create": 0, "HistoryItem:read": 1, "HistoryItem:update": 0,
        "HistoryItem:delete": 0}                # only the write path writes the entity log
    assert {v for k, v in entities.items() if not k.startswith("HistoryItem:")} == {1}
    assert attributes["Order:amount"] == 2 and attributes["User:email"] == 2
    assert "User:password" not in attributes and "User:roles" not in attributes
    assert set(values(body, "specifics").values()) == {1}


def test_authorities_name_resource_and_row_level_roles(make_app):
    app = make_app({"svc.authserver.client.reader.row-level-roles": "own-orders"})
    c = Client(app)
    body = c.get("/rest/permissions", headers=bearer(get_token(c, "reader", "reader-secret"))).json
    assert body["authorities"] == ["ROLE_rest-minimal", "ROLE_sales-reader",
                                   "ROW_LEVEL_ROLE_own-orders"]


def test_user_management_grants_full_operations_on_users_only(make_app):
    app = make_app({"svc.authserver.client.reader.resource-roles": "rest-minimal, user-management"})
    c = Client(app)
    body = c.get("/rest/permissions", headers=bearer(get_token(c, "reader", "reader-secret"))).json
    entities, attributes = values(body, "entities"), values(body, "entityAttributes")
    assert all(entities[f"User:{op}"] == 1 for op in ("create", "read", "update", "delete"))
    assert attributes["User:active"] == 2 and attributes["User:username"] == 2
    assert entities["Customer:read"] == 0 and attributes["Customer:name"] == 0


def test_roles_without_api_scope_grant_nothing_to_rest_callers(make_app):
    ui_only = ResourceRole("ui-sales", entities={"Customer": "*"},
                           attributes={"Customer": {"*": "modify"}}, scope=("UI",))
    application = replace(demo, resource_roles=demo.resource_roles + (ui_only,))
    app = make_app({"svc.authserver.client.reader.resource-roles": "rest-minimal, ui-sales"},
                   application=application)
    c = Client(app)
    body = c.get("/rest/permissions", headers=bearer(get_token(c, "reader", "reader-secret"))).json
    assert values(body, "entities")["Customer:read"] == 0
    assert values(body, "entityAttributes")["Customer:name"] == 0


@pytest.mark.parametrize("path", ["/rest/permissions", "/rest/userInfo"])
def test_session_endpoints_need_rest_enabled(make_app, path):
    app = make_app({"svc.authserver.client.reader.resource-roles": "user-management"})
    c = Client(app)
    response = c.get(path, headers=bearer(get_token(c, "reader", "reader-secret")))
    assert response.status_code == 403
    assert c.get(path).status_code == 401


# A clerk who may edit customers: with own-orders, userId must not be theirs to set.
CUSTOMER_EDITOR = ResourceRole(
    "customer-editor", entities={"Customer": "read,update", "Order": "read"},
    attributes={"Customer": {"*": "modify"}, "Order": {"*": "view"}})


def test_an_attribute_a_row_rule_keys_on_is_view_only_to_its_holders(make_app):
    application = replace(demo, resource_roles=demo.resource_roles + (CUSTOMER_EDITOR,))
    roles = "rest-minimal, customer-editor"
    for row_level, user_id_level in (("", 2), ("own-orders", 1)):
        app = make_app({"svc.authserver.client.reader.resource-roles": roles,
                        "svc.authserver.client.reader.row-level-roles": row_level},
                       application=application)
        c = Client(app)
        body = c.get("/rest/permissions", headers=bearer(get_token(c, "reader", "reader-secret"))).json
        attributes = values(body, "entityAttributes")
        assert attributes["Customer:userId"] == user_id_level
        assert attributes["Customer:name"] == 2


def test_a_user_under_own_orders_cannot_claim_another_customers_orders(make_app):
    app = make_app(application=replace(demo, resource_roles=demo.resource_roles + (CUSTOMER_EDITOR,)))
    c = Client(app)
    admin = bearer(get_token(c))
    alice_id = demo_id("user", "alice")
    own, other = demo_id("customer", 0), demo_id("customer", 2)   # 1 is bruno's
    c.put(f"/rest/entities/Customer/{own}", json={"userId": alice_id}, headers=admin)
    app.users.set_roles("alice", ("rest-minimal", "customer-editor", "own-orders"))
    alice = bearer(password_grant(c).json["access_token"])
    before = sorted(order["id"] for order in c.get("/rest/entities/Order", headers=alice).json)
    assert before
    response = c.put(f"/rest/entities/Customer/{other}", json={"userId": alice_id, "name": "Bo"},
                     headers=alice)
    assert response.status_code == 200          # the attribute is ignored, as any not modifiable
    stored = c.get(f"/rest/entities/Customer/{other}", headers=admin).json
    assert stored["name"] == "Bo" and stored.get("userId") is None
    after = sorted(order["id"] for order in c.get("/rest/entities/Order", headers=alice).json)
    assert after == before
