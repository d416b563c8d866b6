"""Audit fields: who created and last changed a row, and when (UTC)."""
import datetime

from conftest import bearer, demo_id, password_grant

CUSTOMER = demo_id("customer", 3)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _when(text):
    return datetime.datetime.fromisoformat(text)


def test_create_fills_created_and_last_modified_from_the_caller_and_the_clock(client, auth):
    before = _now()
    response = client.post("/rest/entities/Customer", headers=auth, json={
        "name": "Audited", "createdBy": "mallory", "createdDate": "1999-01-01T00:00:00",
        "lastModifiedBy": "mallory", "lastModifiedDate": "1999-01-01T00:00:00"})
    assert response.status_code == 201, response.json
    stored = client.get(f"/rest/entities/Customer/{response.json['id']}", headers=auth).json
    assert stored["createdBy"] == stored["lastModifiedBy"] == "demo-client"
    assert stored["createdDate"] == stored["lastModifiedDate"]
    assert before <= _when(stored["createdDate"]) <= _now()


def test_update_changes_last_modified_and_keeps_created(client, auth):
    created = client.post("/rest/entities/Order", headers=auth, json={
        "number": "A-1", "date": "2024-05-01", "customer": {"id": CUSTOMER}}).json
    first = client.get(f"/rest/entities/Order/{created['id']}", headers=auth).json
    admin = password_grant(client, "admin", "admin-password").json["access_token"]
    response = client.put(f"/rest/entities/Order/{created['id']}", headers=bearer(admin),
                          json={"number": "A-2", "createdBy": "mallory"})
    assert response.status_code == 200, response.json
    second = client.get(f"/rest/entities/Order/{created['id']}", headers=auth).json
    assert (second["createdBy"], second["createdDate"]) == (first["createdBy"], first["createdDate"])
    assert second["createdBy"] == "demo-client" and second["lastModifiedBy"] == "admin"
    assert _when(second["lastModifiedDate"]) >= _when(first["lastModifiedDate"])


def test_lines_saved_with_their_order_are_audited(client, auth):
    product = demo_id("product", 1)
    created = client.post("/rest/entities/Order?responseFetchPlan=order-with-details",
                          headers=auth, json={
                              "number": "A-3", "date": "2024-05-01", "customer": {"id": CUSTOMER},
                              "lines": [{"product": {"id": product}, "quantity": 2}]})
    assert created.status_code == 201, created.json
    order = client.get(f"/rest/entities/Order/{created.json['id']}?fetchPlan=order-with-details",
                       headers=auth).json
    assert order["lines"][0]["createdBy"] == "demo-client"
    assert order["lines"][0]["lastModifiedDate"] is not None


def test_audit_fields_are_read_only_in_metadata_and_openapi(client, auth):
    props = {p["name"]: p for p in client.get("/rest/metadata/entities/OrderLine",
                                               headers=auth).json["properties"]}
    assert all(props[name]["readOnly"] for name in
               ("createdBy", "createdDate", "lastModifiedBy", "lastModifiedDate"))
    schemas = client.get("/rest/docs/openapiDetailed.json",
                         headers=auth).json["components"]["schemas"]
    assert "createdBy" not in schemas["entityInput_Order"]["properties"]


def test_a_restore_is_audited_as_an_update_by_whoever_restores(client, auth):
    created = client.post("/rest/entities/Customer", headers=auth, json={"name": "Restored"}).json
    assert client.delete(f"/rest/entities/Customer/{created['id']}", headers=auth).status_code == 204
    admin = password_grant(client, "admin", "admin-password").json["access_token"]
    response = client.post(f"/rest/entities/Customer/{created['id']}/restore",
                           headers=bearer(admin))
    assert response.status_code == 200, response.json
    restored = client.get(f"/rest/entities/Customer/{created['id']}", headers=auth).json
    assert restored["createdBy"] == "demo-client" and restored["lastModifiedBy"] == "admin"
