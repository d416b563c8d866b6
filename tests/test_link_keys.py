"""The link keys an owner row stores of a many-to-many attribute
(``product.tags_link_keys``, schema/linkkeys.py) follow the link table
whatever writes it: restsvc's write path from either side, deleting a
member, bulk requests, raw SQL. Internal: no attribute, nowhere in answers."""
import json
import threading

import pytest

from conftest import PG_URL, demo_id
from restsvc.demo.data import PRODUCT_TAGS
from schema_support import shop  # noqa: F401  (the fixture)

COLUMN = "tags_link_keys"


def sql(client, statement, params=()):
    database = client.application.database
    try:
        cursor = database.execute_sql(statement, params)
        return cursor.fetchall() if statement.lstrip().upper().startswith("SELECT") else None
    finally:
        database.close()


def stored_keys(client):
    """{product id (database form): the stored keys, parsed, or None}."""
    return {row[0]: None if row[1] is None else json.loads(row[1])
            for row in sql(client, f'SELECT id, "{COLUMN}" FROM product')}


def linked_keys(client):
    """What the link table says: {product id: its tag ids in order, or None}."""
    keys = {row[0]: None for row in sql(client, "SELECT id FROM product")}
    for product, tag in sql(client, "SELECT product_id, tag_id FROM product_tag_through "
                                    "ORDER BY product_id, tag_id"):
        keys[product] = (keys[product] or []) + [tag]
    return keys


def assert_in_step(client):
    stored = stored_keys(client)
    assert stored == linked_keys(client)
    return stored


def tag_ids(client, auth):
    return {tag["name"]: tag["id"] for tag in
            client.get("/rest/entities/Tag?limit=100", headers=auth).json}


def product_url(number):
    return f"/rest/entities/Product/{demo_id('product', number)}"


def test_the_demo_data_is_stored_with_its_links_in_key_order(client):
    stored = assert_in_step(client)
    assert sorted(len(keys or ()) for keys in stored.values()) == sorted(
        len(tags) for tags in PRODUCT_TAGS)
    assert all(keys is None or keys == sorted(keys) for keys in stored.values())


def test_create_replace_and_clear_through_the_api(client, auth):
    ids = tag_ids(client, auth)
    created = client.post("/rest/entities/Product", headers=auth, json={
        "name": "keys", "price": 1, "tags": [{"id": ids["smart"]}, {"id": ids["eco"]}]})
    assert created.status_code == 201
    assert_in_step(client)
    url = f"/rest/entities/Product/{created.json['id']}"
    assert client.put(url, headers=auth, json={"tags": [{"id": ids["new"]}]}).status_code == 200
    assert_in_step(client)
    assert client.put(url, headers=auth, json={"name": "keys 2"}).status_code == 200
    assert client.put(url, headers=auth, json={"tags": []}).status_code == 200
    stored = assert_in_step(client)
    assert [keys for keys in stored.values() if keys is None]        # cleared: NULL
    assert client.delete(url, headers=auth).status_code == 204      # soft delete: links stay
    assert_in_step(client)


def test_writes_from_the_tag_side_and_deleting_a_tag(client, auth):
    ids = tag_ids(client, auth)
    products = [demo_id("product", n) for n in (0, 3, 5)]
    answer = client.put(f"/rest/entities/Tag/{ids['new']}", headers=auth,
                        json={"products": [{"id": p} for p in products]})
    assert answer.status_code == 200, answer.json
    assert_in_step(client)
    assert client.put(f"/rest/entities/Tag/{ids['new']}", headers=auth,
                      json={"products": [{"id": products[1]}]}).status_code == 200
    assert_in_step(client)
    assert client.delete(f"/rest/entities/Tag/{ids['bestseller']}",
                         headers=auth).status_code == 204
    stored = assert_in_step(client)
    assert all(int(ids["bestseller"]) not in (keys or ()) for keys in stored.values())


def test_bulk_create_update_and_delete(client, auth):
    ids = tag_ids(client, auth)
    created = client.post("/rest/entities/Product", headers=auth, json=[
        {"name": f"bulk {n}", "price": 1, "tags": [{"id": ids["eco"]}, {"id": ids["new"]}][:n]}
        for n in range(3)])
    assert created.status_code == 201
    assert_in_step(client)
    answer = client.put("/rest/entities/Product", headers=auth, json=[
        {"id": product["id"], "tags": [{"id": ids["smart"]}]} for product in created.json])
    assert answer.status_code == 200, answer.json
    assert_in_step(client)
    # A refused bulk write leaves the keys as they were, with its links.
    before = stored_keys(client)
    refused = client.put("/rest/entities/Product", headers=auth, json=[
        {"id": created.json[0]["id"], "tags": [{"id": ids["eco"]}]},
        {"id": created.json[1]["id"], "tags": [{"id": "99999"}]}])
    assert refused.status_code == 400
    assert assert_in_step(client) == before
    assert client.delete("/rest/entities/Product", headers=auth,
                         json=[product["id"] for product in created.json]).status_code == 204
    assert_in_step(client)


def test_raw_sql_inserts_updates_and_deletes_of_links(client):
    product = sql(client, "SELECT id FROM product ORDER BY name LIMIT 1")[0][0]
    tags = [row[0] for row in sql(client, "SELECT id FROM tag ORDER BY id DESC")]
    database = client.application.database
    with database.atomic():        # several links of one owner in one statement
        database.execute_sql("DELETE FROM product_tag_through WHERE product_id = %s"
                             .replace("%s", database.param), (product,))
        placeholders = ", ".join([f"({database.param}, {database.param})"] * 3)
        database.execute_sql(f"INSERT INTO product_tag_through (product_id, tag_id) "
                             f"VALUES {placeholders}",
                             [value for tag in tags[:3] for value in (product, tag)])
    database.close()
    assert assert_in_step(client)[product] == sorted(tags[:3])
    sql(client, f"UPDATE product_tag_through SET tag_id = {tags[3]} WHERE tag_id = {tags[0]}")
    assert_in_step(client)
    others = [row[0] for row in sql(client, "SELECT id FROM product ORDER BY name")][1:3]
    sql(client, "UPDATE product_tag_through SET product_id = %s WHERE product_id = %s"
        .replace("%s", database.param), (others[0], product))
    stored = assert_in_step(client)
    assert stored[product] is None
    sql(client, f"DELETE FROM product_tag_through WHERE tag_id IN ({tags[1]}, {tags[2]})")
    assert_in_step(client)
    sql(client, "DELETE FROM product_tag_through")
    assert set(assert_in_step(client).values()) == {None}


@pytest.mark.skipif(not PG_URL, reason="PostgreSQL: TRUNCATE")
def test_truncating_the_link_table_empties_every_array(client):
    sql(client, "TRUNCATE product_tag_through")
    assert set(assert_in_step(client).values()) == {None}


def concurrently(url, first, second):
    """Runs ``first`` in one transaction, then ``second`` in another (which
    must wait for the first's lock on the owner row), then commits the first:
    each a (statement, parameters)."""
    import psycopg2
    connections = [psycopg2.connect(url) for _ in range(2)]
    try:
        connections[0].cursor().execute(*first)
        done = threading.Event()

        def run_second():
            connections[1].cursor().execute(*second)
            connections[1].commit()
            done.set()
        thread = threading.Thread(target=run_second)
        thread.start()
        waited = not done.wait(0.5)
        connections[0].commit()
        thread.join(10)
        assert done.is_set()
        return waited
    finally:
        for connection in connections:
            connection.close()


@pytest.mark.skipif(not PG_URL, reason="SQLite runs one writer at a time")
def test_concurrent_transactions_changing_the_links_of_one_owner_both_count(client):
    """The second transaction waits for the first's lock on the product row
    and builds on what the first committed, not on what it saw before."""
    product = sql(client, "SELECT id FROM product WHERE tags_link_keys IS NULL LIMIT 1")[0][0]
    tags = [row[0] for row in sql(client, "SELECT id FROM tag ORDER BY id")][:4]
    url = client.application.settings.database_url
    insert = "INSERT INTO product_tag_through (product_id, tag_id) VALUES (%s, %s)"
    assert concurrently(url, (insert + ", (%s, %s)", (product, tags[2], product, tags[0])),
                        (insert, (product, tags[1])))
    assert assert_in_step(client)[product] == tags[:3]
    assert concurrently(url, ("DELETE FROM product_tag_through WHERE product_id = %s "
                              "AND tag_id = %s", (product, tags[0])),
                        (insert, (product, tags[3])))
    assert assert_in_step(client)[product] == tags[1:]


def test_the_column_is_no_attribute(client, auth):
    url = f"{product_url(2)}?fetchPlan=product-with-tags"
    assert COLUMN not in client.get(url, headers=auth).get_data(as_text=True)
    listed = client.get("/rest/entities/Product?limit=100&fetchPlan=_local&returnNulls=true",
                        headers=auth).get_data(as_text=True)
    assert COLUMN not in listed
    metadata = client.get("/rest/metadata/entities/Product", headers=auth).json
    assert COLUMN not in {prop["name"] for prop in metadata["properties"]}
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).get_data(as_text=True)
    assert COLUMN not in document
    for condition in ({"property": COLUMN, "operator": "notEmpty"},
                      {"property": COLUMN, "operator": "=", "value": "[1]"}):
        answer = client.post("/rest/entities/Product/search", headers=auth,
                             json={"filter": {"conditions": [condition]}})
        assert answer.status_code == 400
    assert client.put(product_url(0), headers=auth, json={COLUMN: "[1]"}).status_code == 200
    assert_in_step(client)
    sorted_by = client.get(f"/rest/entities/Product?sort={COLUMN}", headers=auth)
    assert sorted_by.status_code in (200, 400)
    assert COLUMN not in sorted_by.get_data(as_text=True)


UUID_MEMBERS = """
@entity(instance_name="name")
class Topic(Entity):
    name = peewee.CharField(max_length=50)


@entity(instance_name="name")
class Essay(Entity):
    name = peewee.CharField(max_length=50)
    topics = peewee.ManyToManyField(Topic, backref="essays")
"""


def test_uuid_members_are_stored_and_answered_in_id_order(shop):  # noqa: F811
    shop.declare(UUID_MEMBERS, entities="Topic, Essay")
    client, auth = shop.client(shop.app(init_schema=True))
    topics = [client.post("/rest/entities/Topic", json={"name": f"t{n}"}, headers=auth).json["id"]
              for n in range(4)]
    chosen = [topics[3], topics[0], topics[2]]
    for name in ("one", "two"):
        assert client.post("/rest/entities/Essay", headers=auth, json={
            "name": name, "topics": [{"id": topic} for topic in chosen]}).status_code == 201
    plan = '{"properties":["name",{"name":"topics","fetchPlan":"_instance_name"}]}'
    page = client.get(f"/rest/entities/Essay?sort=name&fetchPlan={plan}", headers=auth).json
    assert [[topic["id"] for topic in essay["topics"]] for essay in page] == [sorted(chosen)] * 2
    single = client.get(f"/rest/entities/Essay/{page[0]['id']}?fetchPlan={plan}", headers=auth)
    assert single.json["topics"] == page[0]["topics"]
    stored = {keys for (keys,) in shop.sql("SELECT topics_link_keys FROM essay")}
    assert len(stored) == 1     # both essays share one text
    keys = json.loads(stored.pop())
    assert [str(key).replace("-", "") for key in keys] == [
        topic.replace("-", "") for topic in sorted(chosen)]
    shop.sql("DELETE FROM essay_topic_through WHERE topic_id = %s".replace(
        "%s", "?" if not PG_URL else "%s"), (topics[0].replace("-", "") if not PG_URL else topics[0],))
    page = client.get(f"/rest/entities/Essay?sort=name&fetchPlan={plan}", headers=auth).json
    assert [[topic["id"] for topic in essay["topics"]] for essay in page] == [
        sorted(set(chosen) - {topics[0]})] * 2
