"""Audit fields: who created and last changed a row, and when (UTC)."""
import dataclasses
import datetime
import uuid

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token, password_grant
from restsvc import DataAccess, rest_method, rest_service
from restsvc.demo import application as demo

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
    # Written to the millisecond: the clock read before, cut likewise.
    before = before.replace(microsecond=before.microsecond // 1000 * 1000)
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


def _order_with_a_line(client, auth, number):
    """An order created with one line, answered with its details."""
    created = client.post("/rest/entities/Order?responseFetchPlan=order-with-details",
                          headers=auth, json={
                              "number": number, "date": "2024-05-01", "customer": {"id": CUSTOMER},
                              "lines": [{"product": {"id": demo_id("product", 1)}, "quantity": 2}]})
    assert created.status_code == 201, created.json
    return created


def test_lines_saved_with_their_order_are_audited(client, auth):
    created = _order_with_a_line(client, auth, "A-3")
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


# -- services: the caller's name, the service's own, and imports ----------------
@rest_service(name="auditTestService")
class AuditTestService:
    @rest_method(http_methods=("POST",))
    def rename(self, customerId: uuid.UUID, name: str, data: DataAccess) -> str:
        """In the caller's name (the default); audit values in the body are ignored."""
        data.save("Customer", {"name": name, "lastModifiedBy": "mallory"}, entity_id=customerId)
        return "ok"

    @rest_method(http_methods=("POST",))
    def renameInOwnName(self, customerId: uuid.UUID, name: str, data: DataAccess) -> str:
        with data.as_service():
            data.save("Customer", {"name": name}, entity_id=customerId)
        data.save("Customer", {"name": name + " again"}, entity_id=customerId)
        return "ok"

    @rest_method(http_methods=("POST",))
    def deleteInOwnName(self, customerId: uuid.UUID, data: DataAccess) -> str:
        with data.as_service("nightly-cleanup"):
            data.delete("Customer", customerId)
        return "ok"

    @rest_method(http_methods=("POST",))
    def importCustomer(self, name: str, data: DataAccess) -> str:
        with data.importing():
            return data.save("Customer", {
                "name": name, "createdBy": "legacy-erp", "createdDate": "2001-02-03T04:05:06",
                "lastModifiedBy": "clerk", "lastModifiedDate": "2002-03-04T05:06:07"}).id


@pytest.fixture
def services_client(make_app):
    c = Client(make_app(application=dataclasses.replace(
        demo, services=tuple(demo.services) + (AuditTestService(),))))
    return c, bearer(get_token(c))


def _call(c, auth, method, **params):
    response = c.post(f"/rest/services/auditTestService/{method}", headers=auth, json=params)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True)


def _last_history(c, auth, entity_id):
    return c.get(f"/rest/entities/Customer/{entity_id}/history", headers=auth).json[0]


def test_a_service_write_is_audited_in_the_callers_name_and_ignores_body_values(services_client):
    c, auth = services_client
    _call(c, auth, "rename", customerId=CUSTOMER, name="By service")
    stored = c.get(f"/rest/entities/Customer/{CUSTOMER}", headers=auth).json
    assert stored["name"] == "By service" and stored["lastModifiedBy"] == "demo-client"
    assert _last_history(c, auth, CUSTOMER)["username"] == "demo-client"


def test_a_service_writes_in_its_own_name_only_inside_as_service(services_client):
    c, auth = services_client
    _call(c, auth, "renameInOwnName", customerId=CUSTOMER, name="Own")
    items = c.get(f"/rest/entities/Customer/{CUSTOMER}/history", headers=auth).json
    assert [(i["username"], i["changes"][0]["newValue"]) for i in items] == [
        ("demo-client", "Own again"), ("auditTestService", "Own")]
    assert c.get(f"/rest/entities/Customer/{CUSTOMER}",
                 headers=auth).json["lastModifiedBy"] == "demo-client"
    _call(c, auth, "deleteInOwnName", customerId=CUSTOMER)
    deleted = c.get(f"/rest/entities/Customer/{CUSTOMER}?includeDeleted=true", headers=auth).json
    assert deleted["deletedBy"] == "nightly-cleanup"
    assert _last_history(c, auth, CUSTOMER)["username"] == "nightly-cleanup"


def test_an_import_through_a_service_keeps_the_audit_values_it_gives(services_client):
    c, auth = services_client
    created = _call(c, auth, "importCustomer", name="Imported")
    stored = c.get(f"/rest/entities/Customer/{created}", headers=auth).json
    assert (stored["createdBy"], stored["createdDate"]) == ("legacy-erp", "2001-02-03T04:05:06")
    assert (stored["lastModifiedBy"], stored["lastModifiedDate"]) == ("clerk",
                                                                      "2002-03-04T05:06:07")
    assert _last_history(c, auth, created)["username"] == "demo-client"   # who wrote it here


def test_as_service_needs_a_name_outside_a_service(app):
    from restsvc.data.access import Access
    from restsvc.data.bound import DataAccess as Bound
    data = Bound(app.data, Access(app.metadata, None, {}, app.database, {}))
    with pytest.raises(ValueError):
        with data.as_service():
            pass
    with data.as_service("batch-job"):
        assert data.access.username == "batch-job"
    assert data.access.username == "restsvc"


MOMENT = datetime.datetime(2026, 11, 28, 20, 10, 12, 907980)    # the clock, to the microsecond
WRITTEN = "2026-11-28T20:10:12.907"                             # a dateTime: to the millisecond


def _audit_dates(entity):
    """The audit dates the test's clock wrote (a demo customer's createdDate is older)."""
    names = ("lastModifiedDate",) if entity["_entityName"] == "Customer" else (
        "createdDate", "lastModifiedDate")
    return {entity.get(name) for name in names}


def test_audit_fields_are_written_to_the_millisecond_by_every_answer(client, auth, monkeypatch):
    """Create and update answers, get, list, search, a nested reference and
    an order's nested lines, history's changedDate: one form (reference 1.4)."""
    import restsvc.data.write.history
    import restsvc.data.write.writer
    for module in (restsvc.data.write.writer, restsvc.data.write.history):
        monkeypatch.setattr(module, "utc_now", lambda: MOMENT)
    created = _order_with_a_line(client, auth, "A-9")
    order_id = created.json["id"]
    updated = client.put(f"/rest/entities/Order/{order_id}?responseFetchPlan=_base",
                         headers=auth, json={"number": "A-10"})
    client.put(f"/rest/entities/Customer/{CUSTOMER}", headers=auth, json={"email": "a@b.example"})
    by_number = '{"conditions":[{"property":"number","operator":"=","value":"A-10"}]}'
    answers = {
        "create": [created.json, created.json["lines"][0]],
        "update": [updated.json],
        "get": [client.get(f"/rest/entities/Order/{order_id}", headers=auth).json],
        "nested": [client.get(f"/rest/entities/Order/{order_id}?fetchPlan=order-with-details",
                              headers=auth).json["lines"][0]],
        "list": [row for row in client.get("/rest/entities/Order?limit=1000", headers=auth).json
                 if row["id"] == order_id],
        "search": client.get(f"/rest/entities/Order/search?filter={by_number}", headers=auth).json,
        "reference": [client.get(f"/rest/entities/Order/{order_id}?fetchPlan=order-with-details",
                                 headers=auth).json["customer"]],
    }
    for path, entities in answers.items():
        assert entities and all(_audit_dates(entity) == {WRITTEN} for entity in entities), \
            (path, entities)
    history = client.get(f"/rest/entities/Order/{order_id}/history", headers=auth).json
    assert {item["changedDate"] for item in history} == {WRITTEN}
