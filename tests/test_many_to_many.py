"""Many-to-many associations: the demo's Product.tags / Tag.products."""
import logging

import pytest
from werkzeug.test import Client

from conftest import demo_id, get_token
from restsvc import ResourceRole
from restsvc.demo.data import PRODUCT_TAGS, TAGS
from restsvc.demo.roles import PUBLIC_TAGS

WITH_TAGS = "product-with-tags"
TAGGER = ResourceRole(
    "tagger", "Tags products",
    entities={"Product": "read,update", "Tag": "read"},
    attributes={"Product": {"*": "modify"}, "Tag": {"*": "view"}})


def product_url(number, plan=WITH_TAGS):
    return f"/rest/entities/Product/{demo_id('product', number)}?fetchPlan={plan}"


def tag_names(client, auth, number):
    loaded = client.get(product_url(number), headers=auth).json
    return sorted(tag["name"] for tag in loaded["tags"])


def tag_ids(client, auth):
    return {tag["name"]: tag["id"] for tag in
            client.get("/rest/entities/Tag?limit=100", headers=auth).json}


def test_a_product_lists_its_tags_as_the_fetch_plan_says(client, auth):
    for number, tags in enumerate(PRODUCT_TAGS):
        assert tag_names(client, auth, number) == sorted(TAGS[t - 1][0] for t in tags)
    loaded = client.get(product_url(0), headers=auth).json
    assert set(loaded["tags"][0]) == {"_entityName", "_instanceName", "id", "version", "name",
                                      "internal"}
    names_only = client.get(f"{product_url(0, '_local')}", headers=auth).json
    assert "tags" not in names_only
    inline = client.get(product_url(0, '{"properties":["name","tags"]}'), headers=auth).json
    # Without a nested plan: the members' _instance_name plan.
    assert {tuple(sorted(tag)) for tag in inline["tags"]} == {
        ("_entityName", "_instanceName", "id", "name")}


def test_the_other_side_reads_the_same_links(client, auth):
    ids = tag_ids(client, auth)
    plan = '{"extends":"_local","properties":["products"]}'
    eco = client.get(f"/rest/entities/Tag/{ids['eco']}?fetchPlan={plan}", headers=auth).json
    expected = sorted(demo_id("product", n) for n, tags in enumerate(PRODUCT_TAGS) if 1 in tags)
    assert sorted(product["id"] for product in eco["products"]) == expected


def test_members_in_id_order_shared_lists_and_both_directions_in_one_plan(client, auth):
    ids = tag_ids(client, auth)
    chosen = sorted(ids.values(), key=int, reverse=True)[:3]     # given highest id first
    made = [client.post("/rest/entities/Product", headers=auth, json={
        "name": f"same tags {n}", "price": 1, "tags": [{"id": t} for t in chosen]}).json["id"]
        for n in range(3)]
    plan = ('{"extends":"_local","properties":[{"name":"tags","fetchPlan":{"extends":"_local",'
            '"properties":[{"name":"products","fetchPlan":"_instance_name"}]}}]}')
    page = client.post("/rest/entities/Product/search", headers=auth, json={
        "filter": {"conditions": [{"property": "name", "operator": "startsWith",
                                   "value": "same tags"}]}, "fetchPlan": plan}).json
    assert sorted(product["id"] for product in page) == sorted(made)
    for product in page:
        # The database's id order, whatever order they were given in.
        assert [tag["id"] for tag in product["tags"]] == sorted(chosen, key=int)
        for tag in product["tags"]:        # the other direction, nested: UUID members
            members = [member["id"] for member in tag["products"]]
            assert set(made) <= set(members) and members == sorted(members)
    assert page[0]["tags"] == page[1]["tags"] == page[2]["tags"]


def test_a_page_of_products_with_tags_loads_in_a_fixed_number_of_statements(client, auth, caplog):
    ids = list(tag_ids(client, auth).values())
    for number in range(50):
        body = {"name": f"tagged {number}", "price": 1,
                "tags": [{"id": tag_id} for tag_id in ids[:number % 6]]}
        assert client.post("/rest/entities/Product", headers=auth, json=body).status_code == 201

    def statements(limit):
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="peewee"):
            answer = client.get(f"/rest/entities/Product?limit={limit}&fetchPlan={WITH_TAGS}",
                                headers=auth)
        assert len(answer.json) == limit
        # The data's statements: the gate may read the caller's token again
        # (restsvc_* tables) when its cached caller is older than half a second.
        return len([r for r in caplog.records
                    if r.name == "peewee" and '"restsvc_' not in str(r.msg)])
    assert statements(50) == statements(5) == statements(1) == 2     # products, their tags


def test_setting_replacing_and_clearing_members(client, auth):
    ids = tag_ids(client, auth)
    url = f"/rest/entities/Product/{demo_id('product', 3)}"     # no tags
    assert client.put(url, headers=auth, json={"tags": [{"id": ids["eco"]}, {"id": ids["new"]}]}
                      ).status_code == 200
    assert tag_names(client, auth, 3) == ["eco", "new"]
    assert client.put(url, headers=auth, json={"tags": [{"id": ids["smart"]}]}).status_code == 200
    assert tag_names(client, auth, 3) == ["smart"]
    assert client.put(url, headers=auth, json={"name": "Mounting rail XL"}).status_code == 200
    assert tag_names(client, auth, 3) == ["smart"]          # absent: unchanged
    assert client.put(url, headers=auth, json={"tags": []}).status_code == 200
    assert tag_names(client, auth, 3) == []


def test_a_new_product_with_tags_is_listed_by_each_tag(client, auth):
    ids = tag_ids(client, auth)
    created = client.post("/rest/entities/Product", headers=auth, json={
        "name": "Solar roof", "price": 10, "tags": [{"id": ids["eco"]}, {"id": ids["eco"]}]})
    assert created.status_code == 201
    plan = '{"extends":"_local","properties":["products"]}'
    eco = client.get(f"/rest/entities/Tag/{ids['eco']}?fetchPlan={plan}", headers=auth).json
    assert created.json["id"] in [product["id"] for product in eco["products"]]
    # Set from the other side: the product's own list follows.
    client.put(f"/rest/entities/Tag/{ids['new']}", headers=auth,
               json={"products": [{"id": created.json["id"]}]})
    loaded = client.get(f"/rest/entities/Product/{created.json['id']}?fetchPlan={WITH_TAGS}",
                        headers=auth).json
    assert sorted(tag["name"] for tag in loaded["tags"]) == ["eco", "new"]


def test_unknown_or_malformed_members_are_refused_and_nothing_changes(client, auth):
    url = f"/rest/entities/Product/{demo_id('product', 1)}"
    for tags in ([{"id": "99999"}], [{"id": "x"}], [{}], "eco", ["1"]):
        answer = client.put(url, headers=auth, json={"tags": tags})
        assert answer.status_code == 400, tags
        assert set(answer.json) == {"error", "details"}
    assert tag_names(client, auth, 1) == ["bestseller"]


def test_bulk_create_with_members_is_one_transaction(client, auth):
    ids = tag_ids(client, auth)
    bodies = [{"name": "bulk one", "price": 1, "tags": [{"id": ids["eco"]}]},
              {"name": "bulk two", "price": 1, "tags": [{"id": "99999"}]}]
    assert client.post("/rest/entities/Product", headers=auth, json=bodies).status_code == 400
    found = client.post("/rest/entities/Product/search", headers=auth, json={"filter": {
        "conditions": [{"property": "name", "operator": "startsWith", "value": "bulk"}]}}).json
    assert found == []
    bodies[1]["tags"] = [{"id": ids["new"]}, {"id": ids["smart"]}]
    created = client.post(f"/rest/entities/Product?responseFetchPlan={WITH_TAGS}", headers=auth,
                          json=bodies)
    assert created.status_code == 201
    assert [sorted(t["name"] for t in p["tags"]) for p in created.json] == [["eco"],
                                                                           ["new", "smart"]]


def test_deleting_a_tag_removes_its_memberships(client, auth):
    ids = tag_ids(client, auth)
    assert client.delete(f"/rest/entities/Tag/{ids['bestseller']}", headers=auth).status_code == 204
    assert tag_names(client, auth, 1) == []
    assert tag_names(client, auth, 2) == ["clearance", "eco"]


def test_deleting_a_product_removes_its_memberships_not_the_tags(client, auth):
    created = client.post("/rest/entities/Product", headers=auth, json={
        "name": "short-lived", "price": 1, "tags": [{"id": tag_ids(client, auth)["eco"]}]}).json
    assert client.delete(f"/rest/entities/Product/{created['id']}", headers=auth).status_code == 204
    assert "eco" in tag_ids(client, auth)


def test_a_sales_reader_sees_no_internal_tag(client, reader_auth):
    assert tag_names(client, reader_auth, 2) == ["bestseller", "eco"]      # not clearance
    names = {tag["name"] for tag in client.get("/rest/entities/Tag?limit=100",
                                               headers=reader_auth).json}
    assert names == {name for name, internal in TAGS if not internal}
    customer = client.get(f"/rest/entities/Customer/{demo_id('customer', 1)}",
                          headers=reader_auth).json
    assert "email" not in customer


def test_a_hidden_member_is_neither_shown_nor_settable_and_stays(client, auth, client_with_roles):
    tagger, tagger_auth = client_with_roles(TAGGER, overrides={
        "svc.authserver.client.tester.row-level-roles": PUBLIC_TAGS.code})
    ids = tag_ids(client, auth)
    url = f"/rest/entities/Product/{demo_id('product', 2)}"         # eco, bestseller, clearance
    for hidden in ("clearance", "high-margin"):
        answer = tagger.put(url, headers=tagger_auth, json={"tags": [{"id": ids[hidden]}]})
        assert answer.status_code == 400
        assert answer.json["details"] == "Referenced entity for property 'tags' is missing"
    assert tagger.put(url, headers=tagger_auth, json={"tags": [{"id": ids["new"]}]}
                      ).status_code == 200
    assert tag_names(tagger, tagger_auth, 2) == ["new"]
    # The internal tag it could not see (nor name) is still there.
    assert tag_names(client, auth, 2) == ["clearance", "new"]


def test_members_need_read_permission_on_the_target_and_view_on_the_attribute(client_with_roles):
    no_tags = ResourceRole("no-tags", entities={"Product": "read"},
                           attributes={"Product": {"*": "view"}})
    hidden_attribute = ResourceRole("no-tags-attribute", entities={"Product": "read", "Tag": "read"},
                                    attributes={"Product": {"name": "view"}, "Tag": {"*": "view"}})
    for role in (no_tags, hidden_attribute):
        client, auth = client_with_roles(role)
        loaded = client.get(product_url(0), headers=auth)
        assert loaded.status_code == 200
        assert "tags" not in loaded.json


def test_metadata_describes_the_association_from_both_sides(client, auth):
    product = client.get("/rest/metadata/entities/Product", headers=auth).json
    tag = client.get("/rest/metadata/entities/Tag", headers=auth).json
    tags = next(p for p in product["properties"] if p["name"] == "tags")
    products = next(p for p in tag["properties"] if p["name"] == "products")
    assert (tags["attributeType"], tags["cardinality"], tags["type"]) == (
        "ASSOCIATION", "MANY_TO_MANY", "Tag")
    assert (products["attributeType"], products["cardinality"], products["type"]) == (
        "ASSOCIATION", "MANY_TO_MANY", "Product")


@pytest.mark.parametrize("kind", ["entity", "entityInput"])
def test_openapi_describes_the_association(client, auth, kind):
    schemas = client.get("/rest/docs/openapiDetailed.json", headers=auth).json["components"]["schemas"]
    tags = schemas[f"{kind}_Product"]["properties"]["tags"]
    assert tags["type"] == "array"
    if kind == "entityInput":        # members by id: the named reference schema of Tag
        assert tags["items"] == {"$ref": "#/components/schemas/entityRef_Tag"}
        member = schemas["entityRef_Tag"]
        assert member["required"] == ["id"]
        assert member["properties"]["id"]["pattern"] == "^-?[0-9]{1,19}$"
    else:
        assert tags["items"] == {"$ref": "#/components/schemas/entity_Tag"}


def test_members_count_against_the_entities_one_answer_may_hold(make_app):
    # The demo's products and one entity per link: the most one answer may hold.
    most = len(PRODUCT_TAGS) + sum(len(tags) for tags in PRODUCT_TAGS)
    for limit, status in ((most, 200), (most - 1, 400)):
        c = Client(make_app({"svc.rest.max-response-entities": limit}))
        response = c.get(f"/rest/entities/Product?fetchPlan={WITH_TAGS}",
                         headers={"Authorization": f"Bearer {get_token(c)}"})
        assert response.status_code == status, response.json
        if status == 400:
            assert response.json["error"] == "Response too large"
            assert f"more than {limit} entities" in response.json["details"]
        else:
            assert sum(len(product["tags"]) for product in response.json) == most - len(PRODUCT_TAGS)
