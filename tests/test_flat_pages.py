"""Entities of a flat plan are written straight from the database's rows
(data/read/flatrows.py): the bytes must be those the general loader and serializer
write from converted rows, under every permission, with and without nulls."""
import dataclasses
import datetime

import peewee
import pytest
from urllib.parse import quote
from werkzeug.test import Client

from conftest import demo_id, get_token
from pages_support import general as _general, same_as_general as _same_as_general
import restsvc
from restsvc import Entity, ResourceRole
from restsvc.demo import application as demo
from restsvc.data.read.request import Page

READER = ResourceRole(
    "t-flat-reader", entities={"Customer": "read", "Product": "read", "Country": "read"},
    attributes={"Customer": {"name": "view", "grade": "view", "birthDate": "view"},
                "Product": {"*": "view"}, "Country": {"*": "view"}})
NO_NAME = ResourceRole(       # the instance name's attribute is hidden: no _instanceName
    "t-flat-noname", entities={"Customer": "read", "Product": "read"},
    attributes={"Customer": {"grade": "view", "address": "view", "createdDate": "view"},
                "Product": {"price": "view", "sku": "view"}})
FULL = ResourceRole("t-flat-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})


@pytest.mark.parametrize("role", [FULL, READER, NO_NAME], ids=["full", "reader", "noname"])
@pytest.mark.parametrize("nulls", ["", "&returnNulls=true"])
@pytest.mark.parametrize("entity", ["Customer", "Product", "Country", "Tag"])
def test_a_page_writes_each_entity_as_its_single_load(client_with_roles, role, nulls, entity):
    if entity in ("Country", "Tag") and role is not FULL:
        pytest.skip("only the full role reads countries and tags")
    client, auth = client_with_roles(role)
    page = _same_as_general(client, auth, entity, nulls)
    keys = {key for item in page for key, _ in item}
    if role is NO_NAME:
        assert "name" not in keys       # with returnNulls, "_instanceName": null
        assert all(value is None for item in page for key, value in item if key == "_instanceName")
    if role is READER and entity == "Customer":
        assert not keys & {"email", "address", "createdDate"}


@pytest.mark.parametrize("role", [FULL, READER], ids=["full", "reader"])
def test_a_get_tags_what_it_answers_as_the_general_loader_tags_it(client_with_roles, role):
    """A get of a flat plan (data/read/reading.py) gives the ETag the general loader's
    row gives, per plan and returnNulls; a tag it gave answers 304."""
    from restsvc.data.access import access_for
    from restsvc.data.answer.etags import entity_tag
    client, auth = client_with_roles(role)
    app = client.application
    access = access_for(app, app.gate.principal("/rest/entities/Customer", auth["Authorization"]))
    meta = app.data.entity("Customer")
    for plan_name, nulls in (("_base", False), ("_base", True), ("_instance_name", False)):
        plan = app.data.plan(meta, plan_name)
        rows, _ = app.data.select(access, meta, app.data.plan(meta, "_base"), None, Page(limit=3))
        for row in rows:
            query = {"fetchPlan": plan_name, "returnNulls": str(nulls).lower()}
            got = client.get(f"/rest/entities/Customer/{row['id']}", headers=auth,
                             query_string=query)
            assert got.status_code == 200
            assert got.headers["ETag"] == entity_tag(row, plan, access.permissions,
                                                     access.session, nulls)
            again = client.get(f"/rest/entities/Customer/{row['id']}", query_string=query,
                               headers={**auth, "If-None-Match": got.headers["ETag"]})
            assert again.status_code == 304 and again.headers["ETag"] == got.headers["ETag"]


def test_stored_forms_are_written_as_the_loader_converts_them(client_with_roles):
    """Date-times with and without a fraction (trailing zeros dropped), a
    customer without grade, address or dates: the same as a single load."""
    from restsvc.demo.model import Customer
    client, auth = client_with_roles(FULL)
    created = client.post("/rest/entities/Customer", headers=auth,
                          json={"name": "Flat \"quoted\" \u00e9 \\ name"})
    assert created.status_code == 201
    for number, moment in ((0, datetime.datetime(2024, 1, 1, 9, 0, 0, 500000)),
                           (1, datetime.datetime(2024, 1, 1, 9, 0, 0, 123456)),
                           (2, datetime.datetime(2024, 1, 1, 9, 0, 0))):
        Customer.update(createdDate=moment).where(
            Customer.id == demo_id("customer", number)).execute()
    for nulls in ("", "&returnNulls=true"):
        page = _same_as_general(client, auth, "Customer", nulls)
    written = {dict(item)["id"]: dict(item) for item in page}
    assert written[demo_id("customer", 0)]["createdDate"] == "2024-01-01T09:00:00.5"
    assert written[demo_id("customer", 1)]["createdDate"] == "2024-01-01T09:00:00.123"   # to the ms
    assert written[demo_id("customer", 2)]["createdDate"] == "2024-01-01T09:00:00"
    plain = written[created.json["id"]]
    assert plain["name"] == "Flat \"quoted\" \u00e9 \\ name" and plain["address"] is None


def test_search_and_pages_after_a_cursor_are_flat_too(client, auth):
    search = '{"conditions":[{"property":"grade","operator":"=","value":"GOLD"}]}'
    first = client.get(f"/rest/entities/Customer/search?limit=2&filter={search}", headers=auth)
    assert first.status_code == 200 and len(first.json) == 2
    following = client.get(first.headers["Link"].split(">")[0][1:], headers=auth)
    assert following.status_code == 200
    for item in first.json + following.json:
        assert item["grade"] == "GOLD"
        single = client.get(f"/rest/entities/Customer/{item['id']}", headers=auth)
        assert item == single.json


def test_an_inline_flat_plan_writes_what_the_serializer_writes(client, auth):
    plan = '{"properties":["name","grade",{"name":"address","fetchPlan":{"properties":["city"]}}]}'
    expected = _general(client, auth, "Customer", False, plan)
    for _ in range(2):      # the second time with the writer compiled for the first
        first = client.get(f"/rest/entities/Customer?limit=100&fetchPlan={quote(plan)}",
                           headers=auth)
        assert first.get_data(as_text=True) == f"[{','.join(expected.values())}]"
    for item in first.json:
        single = client.get(f"/rest/entities/Customer/{item['id']}?fetchPlan={quote(plan)}",
                            headers=auth)
        assert item == single.json
        assert set(item) <= {"_entityName", "_instanceName", "id", "name", "grade", "address"}
        assert set(item.get("address") or {}) <= {"city"}


TAGS_HIDDEN = ResourceRole(   # products readable, their tags attribute not
    "t-flat-notags", entities={"Product": "read", "Tag": "read"},
    attributes={"Product": {"name": "view", "price": "view"}, "Tag": {"*": "view"}})
NO_TAG_ENTITY = ResourceRole(  # the attribute visible, the members' entity not readable
    "t-flat-notagentity", entities={"Product": "read"}, attributes={"Product": {"*": "view"}})
BOTH_SIDES = ('{"properties":["name",{"name":"products","fetchPlan":{"properties":'
              '["name",{"name":"tags","fetchPlan":"_instance_name"}]}}]}')


@pytest.mark.parametrize("role", [FULL, TAGS_HIDDEN, NO_TAG_ENTITY], ids=["full", "notags", "notagentity"])
@pytest.mark.parametrize("nulls", ["", "&returnNulls=true"])
def test_many_to_many_members_are_written_flat_as_the_serializer_writes_them(
        client_with_roles, role, nulls):
    """Products with their tags (one and the same set of tags shared by several
    products, products with none) and tags with their products and theirs
    again: byte for byte what the general path writes, and flat."""
    from restsvc.data.read.flatrows import is_flat
    from restsvc.data.read.loader import loading_plan
    client, auth = client_with_roles(role)
    app = client.application
    for entity, plan in (("Product", "product-with-tags"), ("Tag", BOTH_SIDES)):
        meta = app.data.entity(entity)
        assert is_flat(meta, loading_plan(app.data.plan(meta, plan)))
        if role is FULL or entity == "Product":
            page = _same_as_general(client, auth, entity, nulls, plan)
    items = [dict(item) for item in page]
    if role is FULL:
        assert any(item["products"] and dict(item["products"][0])["tags"] for item in items)


def test_a_reader_sees_only_the_members_its_row_rules_let_it_see(client, reader_auth):
    """sales-reader: internal tags are hidden in a flat page as in a single load."""
    page = _same_as_general(client, reader_auth, "Product", "", "product-with-tags")
    names = {dict(tag)["name"] for item in page for tag in dict(item)["tags"]}
    assert names and not names & {"clearance", "high-margin"}


@restsvc.entity(instance_name="nickname")
class Pet(Entity):
    """An instance name that may be null, written once for both its places."""
    nickname = peewee.CharField(max_length=50, null=True)


def test_an_instance_name_that_is_null_is_written_as_no_name_in_both_places(make_app):
    client = Client(make_app(application=dataclasses.replace(demo, entities=demo.entities + (Pet,))))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    named = client.post("/rest/entities/Pet", headers=auth, json={"nickname": 'Rex "the" dog'}).json
    unnamed = client.post("/rest/entities/Pet", headers=auth, json={}).json
    for nulls in ("", "&returnNulls=true"):
        page = {row["id"]: row for row in client.get(
            f"/rest/entities/Pet?fetchPlan=_local{nulls}", headers=auth).json}
        assert (page[named["id"]]["_instanceName"], page[named["id"]]["nickname"]) \
            == ('Rex "the" dog', 'Rex "the" dog')
        assert page[unnamed["id"]].get("_instanceName") is None
        assert ("nickname" in page[unnamed["id"]]) == bool(nulls)
        assert page[unnamed["id"]].get("nickname") is None
