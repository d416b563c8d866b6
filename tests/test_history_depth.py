"""History and soft delete of grandchildren: a composition inside a
composition (Voyage -> Leg -> Stop, a test application). Changes at depth 2
are their own entity's items; each parent lists its children's ids."""
import dataclasses

import peewee
import pytest
from werkzeug.test import Client

from conftest import bearer, get_token
from restsvc import Entity, entity
from restsvc.demo import application as demo


@entity(instance_name="name", compositions=("legs",), audited=True, history=True,
        soft_delete=True)
class Voyage(Entity):
    name = peewee.CharField(max_length=50)


@entity(instance_name="name", compositions=("stops",), audited=True, history=True,
        soft_delete=True)
class Leg(Entity):
    name = peewee.CharField(max_length=50)
    voyage = peewee.ForeignKeyField(Voyage, backref="legs", on_delete="CASCADE")


@entity(instance_name="name", audited=True, history=True, soft_delete=True)
class Stop(Entity):
    name = peewee.CharField(max_length=50)
    leg = peewee.ForeignKeyField(Leg, backref="stops", on_delete="CASCADE")


PLAN = {"name": "voyage-deep", "extends": "_local", "properties": [
    {"name": "legs", "fetchPlan": {"extends": "_local", "properties": [
        {"name": "stops", "fetchPlan": "_local"}]}}]}


@pytest.fixture
def voyages(make_app):
    app = make_app(application=dataclasses.replace(
        demo, entities=demo.entities + (Voyage, Leg, Stop)))
    c = Client(app)
    return c, bearer(get_token(c))


def _history(c, auth, entity, entity_id):
    response = c.get(f"/rest/entities/{entity}/{entity_id}/history", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return [(item["kind"], {ch["name"]: (ch.get("oldValue"), ch.get("newValue"))
                            for ch in item["changes"] or ()}) for item in response.json]


def _kinds(c, auth, entity, entity_id):
    return [kind for kind, _ in _history(c, auth, entity, entity_id)]


def _load(c, auth, voyage):
    response = c.get(f"/rest/entities/Voyage/{voyage}", headers=auth,
                     query_string={"fetchPlan": "_local"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return c.post("/rest/entities/Voyage/search", headers=auth, json={
        "filter": {"conditions": [{"property": "id", "operator": "=", "value": voyage}]},
        "fetchPlan": PLAN}).json[0]


def test_changes_at_depth_two_are_their_own_items_and_parents_list_ids(voyages):
    c, auth = voyages
    created = c.post("/rest/entities/Voyage", headers=auth, json={
        "name": "V", "legs": [{"name": "L", "stops": [{"name": "S1"}, {"name": "S2"}]}]})
    assert created.status_code == 201, created.get_data(as_text=True)
    voyage = created.json["id"]
    leg = _load(c, auth, voyage)["legs"][0]
    stops = sorted(stop["id"] for stop in leg["stops"])
    assert _history(c, auth, "Voyage", voyage) == [
        ("CREATE", {"name": (None, "V"), "legs": ([], [leg["id"]])})]
    assert _history(c, auth, "Leg", leg["id"]) == [
        ("CREATE", {"name": (None, "L"), "voyage": (None, voyage), "stops": ([], stops)})]
    assert [_kinds(c, auth, "Stop", stop) for stop in stops] == [["CREATE"], ["CREATE"]]
    first = next(s for s in leg["stops"] if s["name"] == "S1")["id"]
    second = next(s for s in leg["stops"] if s["name"] == "S2")["id"]

    # One grandchild changed, one replaced: the leg lists the stops before and after,
    # the voyage (its legs unchanged) records nothing.
    response = c.put(f"/rest/entities/Voyage/{voyage}", headers=auth, json={
        "legs": [{"id": leg["id"], "stops": [{"id": first, "name": "S1b"}, {"name": "S3"}]}]})
    assert response.status_code == 200, response.get_data(as_text=True)
    third = next(s["id"] for s in _load(c, auth, voyage)["legs"][0]["stops"] if s["name"] == "S3")
    assert _kinds(c, auth, "Voyage", voyage) == ["CREATE"]
    assert _history(c, auth, "Leg", leg["id"])[0] == (
        "UPDATE", {"stops": (stops, sorted([first, third]))})
    assert _history(c, auth, "Stop", first)[0] == ("UPDATE", {"name": ("S1", "S1b")})
    assert _history(c, auth, "Stop", second)[0] == ("DELETE", {"name": ("S2", None),
                                                               "leg": (leg["id"], None)})
    assert _kinds(c, auth, "Stop", third) == ["CREATE"]

    # Deleting the voyage: an item for it, its leg and the stops that go with them
    # (not again for the stop deleted before).
    assert c.delete(f"/rest/entities/Voyage/{voyage}", headers=auth).status_code == 204
    assert _kinds(c, auth, "Voyage", voyage)[0] == "DELETE"
    assert _kinds(c, auth, "Leg", leg["id"])[0] == "DELETE"
    assert [_kinds(c, auth, "Stop", stop)[0] for stop in (first, third)] == ["DELETE"] * 2
    assert _kinds(c, auth, "Stop", second) == ["DELETE", "CREATE"]
    assert c.get(f"/rest/entities/Stop/{first}", headers=auth).status_code == 404

    # Restoring it brings back what went with it, at every depth, and records it.
    assert c.post(f"/rest/entities/Voyage/{voyage}/restore", headers=auth).status_code == 200
    restored = _load(c, auth, voyage)
    assert sorted(s["id"] for s in restored["legs"][0]["stops"]) == sorted([first, third])
    for name, key in (("Voyage", voyage), ("Leg", leg["id"]), ("Stop", first), ("Stop", third)):
        assert _kinds(c, auth, name, key)[0] == "RESTORE"
    assert _kinds(c, auth, "Stop", second) == ["DELETE", "CREATE"]


def test_a_child_removed_by_its_parent_takes_its_children_with_it(voyages):
    c, auth = voyages
    voyage = c.post("/rest/entities/Voyage", headers=auth, json={
        "name": "W", "legs": [{"name": "L1", "stops": [{"name": "A"}]},
                              {"name": "L2", "stops": [{"name": "B"}]}]}).json["id"]
    legs = {leg["name"]: leg for leg in _load(c, auth, voyage)["legs"]}
    kept, dropped = legs["L1"], legs["L2"]
    response = c.put(f"/rest/entities/Voyage/{voyage}", headers=auth,
                     json={"legs": [{"id": kept["id"]}]})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert _history(c, auth, "Voyage", voyage)[0] == (
        "UPDATE", {"legs": (sorted([kept["id"], dropped["id"]]), [kept["id"]])})
    assert _kinds(c, auth, "Leg", dropped["id"])[0] == "DELETE"
    gone = dropped["stops"][0]["id"]
    assert _kinds(c, auth, "Stop", gone)[0] == "DELETE"
    assert c.get(f"/rest/entities/Stop/{gone}", headers=auth).status_code == 404
    # Purged for good: the voyage, its legs and stops, each recorded.
    assert c.delete(f"/rest/entities/Voyage/{voyage}", headers=auth).status_code == 204
    assert c.post(f"/rest/entities/Voyage/{voyage}/purge", headers=auth).status_code == 204
    kept_stop = kept["stops"][0]["id"]
    assert _kinds(c, auth, "Stop", kept_stop)[:2] == ["DELETE", "DELETE"]
    assert c.get(f"/rest/entities/Stop/{kept_stop}?includeDeleted=true",
                 headers=auth).status_code == 404
