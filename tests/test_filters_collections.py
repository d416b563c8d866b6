"""Filters through collections: a path that crosses a composition or a
many-to-many association means "at least one member matches"."""
from conftest import demo_id
from restsvc import ResourceRole
from restsvc.demo.data import PRODUCT_TAGS, TAGS, demo_rows


def search(client, auth, entity, conditions, **extra):
    answer = client.post(f"/rest/entities/{entity}/search", headers=auth, json={
        "filter": {"conditions": conditions}, "returnCount": True, **extra})
    return answer


def products_tagged(name):
    number = [tag for tag, _ in TAGS].index(name) + 1
    return {demo_id("product", i) for i, tags in enumerate(PRODUCT_TAGS) if number in tags}


def orders_with_product(text):
    rows = dict((model.__name__, rows) for model, rows in demo_rows())
    products = {p["id"] for p in rows["Product"] if text in p["name"].lower()}
    return {str(line["order"]) for line in rows["OrderLine"] if line["product"] in products}


def test_tags_name_finds_each_product_with_such_a_tag_once(client, auth):
    answer = search(client, auth, "Product", [{"property": "tags.name", "operator": "=",
                                               "value": "eco"}])
    assert answer.status_code == 200
    ids = [row["id"] for row in answer.json]
    assert len(ids) == len(set(ids))
    assert set(ids) == products_tagged("eco")
    assert answer.headers["X-Total-Count"] == str(len(products_tagged("eco")))


def test_a_product_with_several_matching_tags_counts_once(client, auth):
    expected = products_tagged("eco") | products_tagged("new")
    answer = search(client, auth, "Product", [
        {"property": "tags.name", "operator": "in", "value": ["eco", "new"]}], sort="name")
    assert sorted(row["id"] for row in answer.json) == sorted(expected)
    assert answer.headers["X-Total-Count"] == str(len(expected))
    names = [row["name"] for row in answer.json]
    pages = [row["name"] for offset in range(0, len(expected), 2)
             for row in search(client, auth, "Product", [
                 {"property": "tags.name", "operator": "in", "value": ["eco", "new"]}],
                 sort="name", limit=2, offset=offset).json]
    assert pages == names


def test_tags_id_filters_by_member_id(client, auth):
    tags = {t["name"]: t["id"] for t in client.get("/rest/entities/Tag?limit=50", headers=auth).json}
    answer = search(client, auth, "Product", [{"property": "tags.id", "operator": "=",
                                               "value": tags["smart"]}])
    assert {row["id"] for row in answer.json} == products_tagged("smart")


def test_lines_product_name_on_orders_with_correct_counts_and_pages(client, auth):
    expected = orders_with_product("panel")
    condition = [{"property": "lines.product.name", "operator": "contains", "value": "Panel"}]
    answer = search(client, auth, "Order", condition)
    assert answer.status_code == 200
    assert answer.headers["X-Total-Count"] == str(len(expected))
    assert sorted(row["id"] for row in answer.json) == sorted(expected)
    paged = [row["id"] for offset in range(0, len(expected), 4)
             for row in search(client, auth, "Order", condition, sort="number", limit=4,
                               offset=offset).json]
    assert len(paged) == len(set(paged)) == len(expected)
    count = client.post("/rest/entities/Order/search/count", headers=auth,
                        json={"filter": {"conditions": condition}})
    assert count.status_code == 200
    assert int(count.get_data(as_text=True)) == len(expected)


def test_collection_conditions_combine_with_others(client, auth):
    answer = search(client, auth, "Product", [{"group": "OR", "conditions": [
        {"property": "tags.name", "operator": "=", "value": "outdoor"},
        {"property": "name", "operator": "=", "value": "Heat pump"}]}])
    expected = products_tagged("outdoor") | {demo_id("product", 8)}
    assert {row["id"] for row in answer.json} == expected


def test_hidden_members_never_match(client, reader_auth, auth):
    assert search(client, auth, "Product", [{"property": "tags.name", "operator": "=",
                                             "value": "clearance"}]).json != []
    answer = search(client, reader_auth, "Product", [
        {"property": "tags.name", "operator": "=", "value": "clearance"}])
    assert answer.status_code == 200 and answer.json == []
    assert answer.headers["X-Total-Count"] == "0"


def test_every_hop_needs_permission_like_a_to_one_path(client_with_roles):
    no_tags = ResourceRole("no-tags", entities={"Product": "read"},
                           attributes={"Product": {"*": "view"}})
    client, auth = client_with_roles(no_tags)
    answer = search(client, auth, "Product", [{"property": "tags.name", "operator": "=",
                                               "value": "eco"}])
    assert answer.status_code == 400
    assert answer.json["details"] == "Property for Product not found: tags.name"
    no_lines = ResourceRole("orders-only", entities={"Order": "read", "Product": "read"},
                            attributes={"Order": {"*": "view"}, "Product": {"*": "view"}})
    client, auth = client_with_roles(no_lines)
    answer = search(client, auth, "Order", [{"property": "lines.product.name",
                                             "operator": "contains", "value": "panel"}])
    assert answer.status_code == 400


def test_a_collection_itself_is_not_a_value(client, auth):
    answer = search(client, auth, "Product", [{"property": "tags", "operator": "=", "value": "1"}])
    assert answer.status_code == 400
    assert answer.json["error"] == "Cannot parse entities filter"


def test_a_collection_crossed_after_a_reference_and_beside_a_reference(client, auth):
    """OrderLine -> order (to-one) -> lines (collection) -> product, next to a
    condition on the line's own product: the joins inside EXISTS keep their names."""
    rows = dict((model.__name__, rows) for model, rows in demo_rows())
    panel = {p["id"] for p in rows["Product"] if "panel" in p["name"].lower()}
    orders = {line["order"] for line in rows["OrderLine"] if line["product"] in panel}
    expected = {str(line["id"]) for line in rows["OrderLine"]
                if line["order"] in orders and line["product"] not in panel}
    answer = search(client, auth, "OrderLine", [
        {"property": "order.lines.product.name", "operator": "contains", "value": "panel"},
        {"property": "product.name", "operator": "doesNotContain", "value": "panel"}])
    assert answer.status_code == 200
    assert {row["id"] for row in answer.json} == expected
