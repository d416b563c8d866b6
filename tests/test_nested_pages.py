"""Plans with to-one references, compositions and transient attributes are
loaded as the database's rows at every level and written by row writers
(data/read/nestedrows.py): the bytes, ETags and refusals must be those of the
general loader and serializer, under every permission, row-level role and
soft delete, with and without nulls."""
import dataclasses
import json
from urllib.parse import quote

import peewee
import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from pages_support import caller, general, general_rows, same_as_general
from restsvc import Entity, ResourceRole, RowLevelRole, entity, transient
from restsvc.demo import application as demo
from restsvc.data.read.request import Page

DETAILS = "order-with-details"
ENTITIES = ("Order", "OrderLine", "Customer", "Product")
FULL = ResourceRole("t-nested-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
RESTRICTED = ResourceRole(    # no status, line prices, emails, SKUs; only the address's city
    "t-nested-restricted", entities=dict.fromkeys(ENTITIES, "read"),
    attributes={"Order": dict.fromkeys(("number", "date", "amount", "itemCount", "customer",
                                        "lines"), "view"),
                "OrderLine": {"quantity": "view", "product": "view"},
                "Customer": {"name": "view", "grade": "view", "address.city": "view"},
                "Product": {"name": "view", "price": "view"}})
NO_NAME = ResourceRole(       # the instance names' attributes hidden (a line's: its product)
    "t-nested-noname", entities=dict.fromkeys(ENTITIES, "read"),
    attributes={"Order": dict.fromkeys(("date", "itemCount", "customer", "lines"), "view"),
                "OrderLine": {"quantity": "view", "price": "view"},
                "Customer": {"email": "view"}, "Product": {"name": "view", "sku": "view"}})
NO_TARGETS = ResourceRole(    # orders and lines, but neither customers nor products
    "t-nested-notargets", entities={"Order": "read", "OrderLine": "read"},
    attributes={"Order": {"*": "view"}, "OrderLine": {"*": "view"}})
NO_LINES = ResourceRole(      # orders and customers; itemCount reads the stored lines
    "t-nested-nolines", entities={"Order": "read", "Customer": "read"},
    attributes={"Order": {"*": "view"}, "Customer": {"*": "view"}})
HIDING = RowLevelRole(        # referenced rows, children and members the caller cannot see
    "t-nested-hiding", filters={
        "Customer": {"conditions": [{"property": "grade", "operator": "<>", "value": "GOLD"}]},
        "Product": {"conditions": [{"property": "price", "operator": "<", "value": 500}]},
        "OrderLine": {"conditions": [{"property": "quantity", "operator": ">", "value": 1}]}})
WIDE = ('{"extends":"_local","properties":["itemCount",'
        '{"name":"customer","fetchPlan":{"extends":"_base","properties":["email"]}},'
        '{"name":"lines","fetchPlan":{"extends":"_local","properties":['
        '{"name":"product","fetchPlan":"product-with-tags"},'
        '{"name":"order","fetchPlan":"_instance_name"}]}}]}')
NULLS = pytest.mark.parametrize("nulls", ["", "&returnNulls=true"], ids=["", "nulls"])


def _kind(client, entity, fetch_plan):
    from restsvc.data.read.flatrows import raw_kind
    from restsvc.data.read.loader import loading_plan
    meta = client.application.data.entity(entity)
    return raw_kind(meta, loading_plan(client.application.data.plan(meta, fetch_plan)))


def _orders(page):
    return [dict(item) for item in page]


@pytest.mark.parametrize("role", [FULL, RESTRICTED, NO_NAME], ids=["full", "restricted", "noname"])
@NULLS
@pytest.mark.parametrize("fetch_plan", [DETAILS, WIDE], ids=["details", "inline"])
def test_a_nested_page_writes_what_the_general_loader_writes(client_with_roles, role, nulls,
                                                             fetch_plan):
    """Customers (a street but no city too), lines, their products (with tags,
    and the lines' order again) and itemCount."""
    from restsvc.demo.model import Customer
    client, auth = client_with_roles(role)
    assert _kind(client, "Order", fetch_plan) == "nested"
    Customer.update(address_city=None).where(Customer.id == demo_id("customer", 3)).execute()
    orders = _orders(same_as_general(client, auth, "Order", nulls, fetch_plan))
    assert all("itemCount" in order for order in orders)
    lines = [dict(line) for order in orders for line in order["lines"]]
    if role is NO_NAME:
        assert not any("_instanceName" in order and order["_instanceName"] for order in orders)
        assert not any(line.get("_instanceName") or "product" in line for line in lines)
    if role is RESTRICTED:
        customers = [dict(order["customer"]) for order in orders]
        assert not any("email" in customer or "status" in order
                       for customer, order in zip(customers, orders))
        third = [customer for customer in customers if customer["id"] == demo_id("customer", 3)]
        assert third and all(customer.get("address") is None for customer in third)
        assert all(line["_instanceName"] == dict(line["product"])["name"] for line in lines)


@pytest.mark.parametrize("role", [NO_TARGETS, NO_LINES], ids=["notargets", "nolines"])
@NULLS
def test_references_to_entities_the_caller_may_not_read_are_left_out(client_with_roles, role,
                                                                      nulls):
    client, auth = client_with_roles(role)
    for fetch_plan in (DETAILS, WIDE):
        orders = _orders(same_as_general(client, auth, "Order", nulls, fetch_plan))
        assert all(order["itemCount"] > 0 for order in orders)
        if role is NO_LINES:
            assert all("customer" in order and "lines" not in order for order in orders)
        else:
            assert not any("customer" in order for order in orders)
            lines = [dict(line) for order in orders for line in order["lines"]]
            assert lines and not any("product" in line or line.get("_instanceName")
                                     for line in lines)


@NULLS
def test_rows_a_row_level_role_hides_are_null_or_absent(client_with_roles, nulls):
    """Gold customers, products of 500 and more and lines of one item are hidden:
    a hidden customer is null, a line of a hidden product has no product and
    no name, itemCount counts the lines the caller sees."""
    client, auth = client_with_roles(FULL, row_level=(HIDING,))
    for fetch_plan in (DETAILS, WIDE):
        orders = _orders(same_as_general(client, auth, "Order", nulls, fetch_plan))
        if nulls:
            assert any(order["customer"] is None for order in orders)
        else:
            assert any("customer" not in order for order in orders)
        lines = [dict(line) for order in orders for line in order["lines"]]
        assert lines and all(line["quantity"] > 1 for line in lines)
        assert any(line.get("product") is None for line in lines)
        assert all(order["itemCount"] == sum(dict(line)["quantity"] for line in order["lines"])
                   for order in orders)


@NULLS
def test_a_reader_sees_only_the_members_and_attributes_its_roles_let_it_see(client, reader_auth,
                                                                           nulls):
    """sales-reader with public-tags: no customer emails, no internal tags."""
    assert _kind(client, "Order", WIDE) == "nested"
    orders = _orders(same_as_general(client, reader_auth, "Order", nulls, WIDE))
    tags = {dict(tag)["name"] for order in orders for line in order["lines"]
            for tag in dict(dict(line)["product"])["tags"]}
    assert tags and not tags & {"clearance", "high-margin"}
    assert not any("email" in dict(order["customer"]) for order in orders)


def test_soft_deleted_rows_are_referenced_but_not_children(client_with_roles):
    """A deleted customer and product are still written where live rows refer
    to them; a deleted line is not, nor counted, unless deleted rows are asked for."""
    role = dataclasses.replace(FULL, code="t-nested-deleted", specifics=("rest.deleted.read",))
    client, auth = client_with_roles(role)
    order = client.get(f"/rest/entities/Order/{demo_id('order', 2)}?fetchPlan={DETAILS}",
                       headers=auth).json
    line = order["lines"][0]
    for path in (f"Customer/{order['customer']['id']}", f"Product/{line['product']['id']}",
                 f"OrderLine/{line['id']}"):
        assert client.delete(f"/rest/entities/{path}", headers=auth).status_code == 204
    for query in ("", "&returnNulls=true", "&includeDeleted=true"):
        orders = {item["id"]: item for item in _orders(
            same_as_general(client, auth, "Order", query, DETAILS))}
        again = orders[order["id"]]
        assert dict(again["customer"])["id"] == order["customer"]["id"]
        shown = [dict(item)["id"] for item in again["lines"]]
        assert (line["id"] in shown) == (query == "&includeDeleted=true")
        assert again["itemCount"] == order["itemCount"] - (0 if line["id"] in shown
                                                           else line["quantity"])


def test_a_single_load_tags_what_it_answers_as_the_general_loader_tags_it(client, auth):
    from restsvc.data.answer.etags import entity_tag
    for nulls in (False, True):
        access, _, plan, rows = general_rows(client, auth, "Order", DETAILS)
        for row in rows[:5]:
            query = {"fetchPlan": DETAILS, "returnNulls": str(nulls).lower()}
            got = client.get(f"/rest/entities/Order/{row['id']}", headers=auth, query_string=query)
            assert got.headers["ETag"] == entity_tag(row, plan, access.permissions,
                                                     access.session, nulls)
            again = client.get(f"/rest/entities/Order/{row['id']}", query_string=query,
                               headers={**auth, "If-None-Match": got.headers["ETag"]})
            assert again.status_code == 304


def test_searches_and_their_next_pages_write_what_the_general_loader_writes(client, auth):
    spec = {"conditions": [{"property": "status", "operator": "in", "value": ["PAID", "NEW"]}]}
    expected = general(client, auth, "Order", False, DETAILS, spec)
    url = f"/rest/entities/Order/search?limit=4&fetchPlan={DETAILS}&filter={quote(json.dumps(spec))}"
    pages = []
    while url:
        answer = client.get(url, headers=auth)
        assert answer.status_code == 200, answer.text
        pages.append(answer.get_data(as_text=True)[1:-1])
        url = answer.headers.get("Link", "").split(">")[0][1:] or None
    assert len(pages) > 2 and ",".join(pages) == ",".join(expected.values())
    posted = client.post("/rest/entities/Order/search", headers=auth,
                         json={"filter": spec, "fetchPlan": DETAILS, "returnNulls": True})
    assert posted.get_data(as_text=True) == \
        f"[{','.join(general(client, auth, 'Order', True, DETAILS, spec).values())}]"


def test_a_page_without_rows_is_empty(client, auth):
    """Nothing found: an empty array (the rows' writer still knows its
    transient attributes), and a missing entity's 404."""
    spec = quote(json.dumps({"conditions": [{"property": "number", "operator": "=",
                                             "value": "none"}]}))
    for plan in (DETAILS, WIDE):
        for nulls in ("false", "true"):
            found = client.get(f"/rest/entities/Order/search?filter={spec}&returnNulls={nulls}"
                               f"&fetchPlan={quote(plan)}", headers=auth)
            assert found.status_code == 200 and found.get_data(as_text=True) == "[]"
    missing = client.get(f"/rest/entities/Order/{demo_id('order', 999)}?fetchPlan={DETAILS}",
                         headers=auth)
    assert missing.status_code == 404


def test_chunked_loads_keep_what_each_chunk_loaded(client, auth, monkeypatch):
    """Referenced rows and children loaded a few ids at a time (loader._CHUNK)."""
    monkeypatch.setattr("restsvc.data.read.loader._CHUNK", 3)
    for query in ("", "&returnNulls=true"):
        same_as_general(client, auth, "Order", query, WIDE)


@pytest.mark.parametrize("row_level", [(), (HIDING,)], ids=["all", "hiding"])
def test_an_answer_too_large_is_refused_where_the_general_loader_refuses_it(client_with_roles,
                                                                            row_level):
    """svc.rest.max-response-entities counts every row loaded and every object
    written (a customer of several orders once per order, a hidden one not)."""
    from restsvc.errors import BadRequest
    client, auth = client_with_roles(FULL, row_level=row_level)
    app = client.application
    access = caller(client, auth, "Order")
    meta, data = app.data.entity("Order"), app.data
    settings = data.settings

    def refused(budget, raw):
        data.settings = dataclasses.replace(settings, max_response_entities=budget)
        try:
            if raw:
                data.search(access, meta, data.plan(meta, DETAILS), None, Page(limit=20))
            else:
                data.select(access, meta, data.plan(meta, DETAILS), None, Page(limit=20), spare=1)
        except BadRequest as exc:
            assert exc.error == "Response too large"
            return True
        return False

    low, high = 1, 1000         # the general loader's least budget that answers
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if refused(middle, False) else (low, middle)
    assert low > 21 * 2         # more than the orders and customers: the objects counted
    assert refused(low - 1, True) and not refused(low, True)
    data.settings = dataclasses.replace(settings, max_response_entities=low - 1)
    answer = client.get(f"/rest/entities/Order?limit=20&fetchPlan={DETAILS}", headers=auth)
    assert answer.status_code == 400 and answer.json["error"] == "Response too large"


@entity(instance_name="name")
class KitPart(Entity):
    name = peewee.CharField(max_length=50)
    secret = peewee.BooleanField(default=False)


@entity(instance_name="name")
class Kit(Entity):
    """Transient attributes that read a many-to-many attribute and a reference."""
    name = peewee.CharField(max_length=50)
    leader = peewee.ForeignKeyField(KitPart, null=True)
    parts = peewee.ManyToManyField(KitPart)

    @transient("string")
    def partNames(self):
        return ",".join(sorted(part.name for part in self.parts))

    @transient("string")
    def leaderName(self):
        return None if self.leader is None else self.leader.name


KIT_READER = ResourceRole(    # the getters' attributes hidden: they still read what the caller sees
    "t-kit-reader", entities={"Kit": "read", "KitPart": "read"},
    attributes={"Kit": {"name": "view", "partNames": "view", "leaderName": "view"},
                "KitPart": {"*": "view"}})
KIT_FULL = ResourceRole("t-kit-full", entities={"Kit": "read", "KitPart": "read"},
                        attributes={"Kit": {"*": "view"}, "KitPart": {"*": "view"}})
NO_SECRETS = RowLevelRole("t-kit-public", filters={
    "KitPart": {"conditions": [{"property": "secret", "operator": "=", "value": False}]}})
KIT_PLAN = ('{"properties":["name","partNames","leaderName",{"name":"parts","fetchPlan":"_base"},'
            '{"name":"leader","fetchPlan":"_base"}]}')


@pytest.mark.parametrize("role", [KIT_READER, KIT_FULL], ids=["hidden", "shown"])
@NULLS
def test_transient_attributes_read_the_members_and_rows_the_caller_may_see(make_app, role,
                                                                           nulls):
    """A getter reads the members and referenced rows the row-level role lets
    the caller see, also where their attributes are hidden from it."""
    application = dataclasses.replace(
        demo, entities=demo.entities + (KitPart, Kit),
        resource_roles=tuple(demo.resource_roles) + (role,),
        row_level_roles=tuple(demo.row_level_roles) + (NO_SECRETS,))
    prefix = "svc.authserver.client.tester."
    app = make_app({f"{prefix}client-id": "tester", f"{prefix}client-secret": "{noop}tester-secret",
                    f"{prefix}resource-roles": f"rest-minimal,{role.code}",
                    f"{prefix}row-level-roles": NO_SECRETS.code}, application=application)
    open_part, secret_part, other_part = (KitPart.create(name=name, secret=secret)
                                          for name, secret in (("a", False), ("b", True),
                                                               ("c", False)))
    first = Kit.create(name="first", leader=secret_part)
    first.parts.add([open_part, secret_part])
    second = Kit.create(name="second", leader=open_part)
    second.parts.add([other_part, open_part])
    Kit.create(name="third")
    client = Client(app)
    auth = bearer(get_token(client, "tester", "tester-secret"))
    assert _kind(client, "Kit", KIT_PLAN) == "nested"
    kits = {item["name"]: item for item in _orders(
        same_as_general(client, auth, "Kit", nulls, KIT_PLAN))}
    assert kits["first"]["partNames"] == "a" and kits["second"]["partNames"] == "a,c"
    assert kits["first"].get("leaderName") is None and kits["second"]["leaderName"] == "a"
    assert ("parts" in kits["first"]) == (role is KIT_FULL)


def test_pages_of_a_model_that_presents_its_rows_write_what_its_records_write(client, auth):
    """HistoryItem (present_rows) is read as every entity is."""
    assert _kind(client, "HistoryItem", None) == "flat"
    changed = client.put(f"/rest/entities/Customer/{demo_id('customer', 1)}", headers=auth,
                         json={"name": "Bruno Berg-Haas"})
    assert changed.status_code == 200
    assert same_as_general(client, auth, "HistoryItem")
