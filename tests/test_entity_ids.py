"""Ids of every common kind: UUIDs (the default), integers the database
assigns (Tag) and strings the application assigns (Country). JSON writes
each id as a string, as the reference does."""
import dataclasses

import peewee
import pytest
from werkzeug.test import Client

from conftest import get_token
from restsvc import Entity, entity
from restsvc.demo import application as demo
from restsvc.demo.model import Country, Tag


@entity(instance_name="label")
class Parcel(Entity):
    """A test entity with an integer id that refers to both other id kinds."""
    id = peewee.AutoField()
    label = peewee.CharField(max_length=50)
    country = peewee.ForeignKeyField(Country, null=True, on_delete="RESTRICT")
    tag = peewee.ForeignKeyField(Tag, null=True, on_delete="RESTRICT")


@pytest.fixture
def parcels(make_app):
    app = make_app(application=dataclasses.replace(demo, entities=demo.entities + (Parcel,)))
    client = Client(app)
    return client, {"Authorization": f"Bearer {get_token(client)}"}


def tag_id(client, auth, name):
    found = client.post("/rest/entities/Tag/search", headers=auth, json={"filter": {
        "conditions": [{"property": "name", "operator": "=", "value": name}]}}).json
    return found[0]["id"]


def test_integer_id_is_assigned_by_the_database_and_answered_in_location_and_body(client, auth):
    created = client.post("/rest/entities/Tag", headers=auth, json={"name": "fresh"})
    assert created.status_code == 201
    new_id = created.json["id"]
    assert isinstance(new_id, str) and new_id.isdigit()
    assert created.headers["Location"].endswith(f"/rest/entities/Tag/{new_id}")
    loaded = client.get(f"/rest/entities/Tag/{new_id}", headers=auth).json
    assert loaded["id"] == new_id and loaded["name"] == "fresh" and loaded["internal"] is False


def test_integer_id_entity_is_updated_and_deleted_by_its_id(client, auth):
    new_id = client.post("/rest/entities/Tag", headers=auth, json={"name": "fresh"}).json["id"]
    updated = client.put(f"/rest/entities/Tag/{new_id}", headers=auth,
                         json={"name": "fresher", "internal": True})
    assert updated.status_code == 200
    loaded = client.get(f"/rest/entities/Tag/{new_id}", headers=auth).json
    assert (loaded["name"], loaded["internal"], loaded["version"]) == ("fresher", True, 2)
    assert client.delete(f"/rest/entities/Tag/{new_id}", headers=auth).status_code == 204
    assert client.get(f"/rest/entities/Tag/{new_id}", headers=auth).status_code == 404


def test_a_create_may_not_choose_an_id_the_database_assigns(client, auth):
    answer = client.post("/rest/entities/Tag", headers=auth, json={"id": "9999", "name": "mine"})
    assert answer.status_code == 400
    assert [v["path"] for v in answer.json] == ["id"]
    assert client.get("/rest/entities/Tag/9999", headers=auth).status_code == 404


def test_an_id_that_is_not_a_whole_number_is_a_bad_request(client, auth):
    answer = client.get("/rest/entities/Tag/abc", headers=auth)
    assert answer.status_code == 400
    assert answer.json["error"] == "Invalid entity ID"


def test_integer_ids_filter_and_sort_as_numbers(client, auth):
    found = client.post("/rest/entities/Tag/search", headers=auth, json={
        "filter": {"conditions": [{"property": "id", "operator": ">", "value": "5"}]},
        "sort": "-id"}).json
    ids = [row["id"] for row in found]
    assert ids and all(int(i) > 5 for i in ids)
    assert ids == sorted(ids, key=int, reverse=True)


def test_string_id_is_the_applications_key(client, auth):
    created = client.post("/rest/entities/Country", headers=auth, json={"id": "PL", "name": "Poland"})
    assert created.status_code == 201
    assert created.headers["Location"].endswith("/rest/entities/Country/PL")
    assert client.get("/rest/entities/Country/PL", headers=auth).json["name"] == "Poland"
    # An id with characters a URL path cannot hold is percent-encoded in Location.
    odd = client.post("/rest/entities/Country", headers=auth, json={"id": "\x17Q", "name": "Odd"})
    assert odd.status_code == 201
    assert odd.headers["Location"].endswith("/rest/entities/Country/%17Q")
    # A POST with an existing id updates it, as for UUIDs.
    assert client.post("/rest/entities/Country", headers=auth,
                       json={"id": "PL", "name": "Polska"}).status_code == 201
    loaded = client.get("/rest/entities/Country/PL", headers=auth).json
    assert (loaded["name"], loaded["version"]) == ("Polska", 2)
    assert client.put("/rest/entities/Country/PL", headers=auth,
                      json={"name": "Poland"}).status_code == 200
    assert client.delete("/rest/entities/Country/PL", headers=auth).status_code == 204
    assert client.get("/rest/entities/Country/PL", headers=auth).status_code == 404


def test_string_id_entity_needs_its_id_on_create(client, auth):
    answer = client.post("/rest/entities/Country", headers=auth, json={"name": "Nowhere"})
    assert answer.status_code == 400
    assert [v["path"] for v in answer.json] == ["id"]
    too_long = client.post("/rest/entities/Country", headers=auth,
                           json={"id": "NOWHERE", "name": "Nowhere"})
    assert too_long.status_code == 400


def test_references_to_integer_and_string_ids_are_written_loaded_and_filtered(parcels):
    client, auth = parcels
    eco = tag_id(client, auth, "eco")
    created = client.post("/rest/entities/Parcel", headers=auth, json={
        "label": "p1", "country": {"id": "DE"}, "tag": {"id": eco}})
    assert created.status_code == 201, created.json
    parcel_id = created.json["id"]
    loaded = client.get(f"/rest/entities/Parcel/{parcel_id}?fetchPlan=_local", headers=auth).json
    assert loaded["id"] == parcel_id
    full = client.post("/rest/entities/Parcel/search", headers=auth, json={
        "filter": {"conditions": [{"property": "label", "operator": "=", "value": "p1"}]},
        "fetchPlan": {"extends": "_local", "properties": [
            {"name": "country", "fetchPlan": "_instance_name"},
            {"name": "tag", "fetchPlan": "_instance_name"}]}}).json
    assert [(row["country"]["id"], row["country"]["_instanceName"], row["tag"]["id"])
            for row in full] == [("DE", "Germany", eco)]
    for condition in ({"property": "country", "operator": "=", "value": "DE"},
                      {"property": "country.id", "operator": "in", "value": ["DE", "FR"]},
                      {"property": "tag", "operator": "=", "value": eco},
                      {"property": "tag.id", "operator": "=", "value": int(eco)}):
        found = client.post("/rest/entities/Parcel/search", headers=auth, json={
            "filter": {"conditions": [condition,
                                      {"property": "id", "operator": "=", "value": parcel_id}]}})
        assert [row["id"] for row in found.json] == [parcel_id], condition
    moved = client.put(f"/rest/entities/Parcel/{parcel_id}", headers=auth,
                       json={"country": {"id": "FR"}, "tag": None})
    assert moved.status_code == 200
    loaded = client.get(f"/rest/entities/Parcel/{parcel_id}?fetchPlan=_base", headers=auth).json
    assert "tag" not in loaded
    assert client.delete(f"/rest/entities/Parcel/{parcel_id}", headers=auth).status_code == 204


def test_the_references_of_a_page_are_loaded_whatever_characters_their_ids_hold(parcels):
    """A page's references are loaded by their keys together (on PostgreSQL
    as one array): string ids with the characters an array's text quotes,
    and integer ids, each find their row."""
    client, auth = parcels
    odd = ['"\\', ",}", "{ ", "a'", "NU"]
    for number, key in enumerate(odd):
        assert client.post("/rest/entities/Country", headers=auth,
                           json={"id": key, "name": f"Odd {number}"}).status_code == 201
    tags = [tag_id(client, auth, name) for name in ("eco", "bestseller")]
    for number, key in enumerate(odd):
        assert client.post("/rest/entities/Parcel", headers=auth, json={
            "label": f"odd {number}", "country": {"id": key},
            "tag": {"id": tags[number % 2]}}).status_code == 201
    page = client.post("/rest/entities/Parcel/search", headers=auth, json={
        "filter": {"conditions": [{"property": "label", "operator": "startsWith", "value": "odd"}]},
        "sort": "label", "fetchPlan": {"extends": "_local", "properties": [
            {"name": "country", "fetchPlan": "_instance_name"},
            {"name": "tag", "fetchPlan": "_instance_name"}]}}).json
    assert [(row["label"], row["country"]["id"], row["country"]["_instanceName"], row["tag"]["id"])
            for row in page] == [(f"odd {number}", key, f"Odd {number}", tags[number % 2])
                                 for number, key in enumerate(odd)]


def test_unknown_referenced_ids_of_each_kind_are_missing_references(parcels):
    client, auth = parcels
    for body in ({"label": "x", "country": {"id": "XX"}}, {"label": "x", "tag": {"id": "99999"}},
                 {"label": "x", "tag": {"id": "not a number"}}):
        answer = client.post("/rest/entities/Parcel", headers=auth, json=body)
        assert answer.status_code == 400, body
        assert "is missing" in answer.json["details"]


def test_a_country_still_referenced_cannot_be_deleted(parcels):
    client, auth = parcels
    client.post("/rest/entities/Country", headers=auth, json={"id": "PT", "name": "Portugal"})
    client.post("/rest/entities/Parcel", headers=auth, json={"label": "x", "country": {"id": "PT"}})
    answer = client.delete("/rest/entities/Country/PT", headers=auth)
    assert answer.status_code == 409
    assert answer.json["error"] == "Delete policy violation"


def test_metadata_and_openapi_describe_each_id_kind(client, auth):
    tag = client.get("/rest/metadata/entities/Tag", headers=auth).json
    country = client.get("/rest/metadata/entities/Country", headers=auth).json
    assert {p["name"]: p["type"] for p in tag["properties"]}["id"] == "int"
    assert {p["name"]: p["type"] for p in country["properties"]}["id"] == "string"
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    schemas = document["components"]["schemas"]
    assert schemas["entity_Tag"]["properties"]["id"]["type"] == "string"
    assert schemas["entity_Tag"]["properties"]["id"]["pattern"] == "^-?[0-9]{1,19}$"
    assert schemas["entity_Country"]["properties"]["id"]["maxLength"] == 2
    assert "id" in schemas["entityNew_Country"]["required"]


@entity()
class Licence(Entity):
    """A string id of 32 hex digits: the length of a UUID stored without
    dashes, yet an application's own key, written as it was given."""
    id = peewee.CharField(primary_key=True, max_length=32)
    holder = peewee.CharField(max_length=50)


def test_a_string_id_of_32_hex_digits_is_never_written_as_a_uuid(make_app):
    app = make_app(application=dataclasses.replace(demo, entities=demo.entities + (Licence,)))
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    key = "0123456789abcdef0123456789abcdef"
    created = client.post("/rest/entities/Licence", headers=auth, json={"id": key, "holder": "Ann"})
    assert created.status_code == 201, created.json
    assert created.json["id"] == key
    one = client.get(f"/rest/entities/Licence/{key}", headers=auth)
    # Without an instance name of its own, an entity is named by its id.
    assert (one.json["id"], one.json["_instanceName"]) == (key, f"Licence-{key}")
    page = client.get("/rest/entities/Licence", headers=auth).json
    assert [(row["id"], row["_instanceName"]) for row in page] == [(key, f"Licence-{key}")]
    # The ETag names the same entity: a conditional load with it is answered 304.
    again = client.get(f"/rest/entities/Licence/{key}", headers={
        **auth, "If-None-Match": one.headers["ETag"]})
    assert again.status_code == 304


def test_a_forked_worker_makes_ids_of_its_own():
    """Ids draw their random bits from a buffer of OS entropy: a worker forked
    after the master made ids must not make the ids the master makes next."""
    import os
    import time
    from restsvc.model.entity import new_id
    new_id()                    # the buffer filled before the fork
    time.sleep(0.005)           # a later millisecond: no id is bumped past the last one
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.write(write, new_id().hex.encode())
        os._exit(0)
    os.close(write)
    mine = new_id()
    os.waitpid(child, 0)
    theirs = int(os.read(read, 64).decode(), 16)
    os.close(read)
    random_bits = (1 << 62) - 1
    assert mine.int & random_bits != theirs & random_bits
