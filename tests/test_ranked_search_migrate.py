"""The full-text index of ranked search is part of the declared schema
(schema/fulltext.py): ``restsvc migrate`` creates it on an existing
database holding rows, replaces it when the declaration changes, and a
SQLite table rebuild keeps it; on SQLite and $RESTSVC_TEST_DATABASE_URL."""
from conftest import PG_URL
from schema_support import columns, shop  # noqa: F401  (the fixture)

V1 = """
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50)
    bio = peewee.TextField(null=True)
"""
SEARCHED = V1.replace('@entity(instance_name="name")',
                      '@entity(instance_name="name", search={"name": "A", "bio": "B"})')
ROWS = [("Ann Vellum", "Writes about parchment"), ("Bob Parchment", "Collects vellum"),
        ("Cy Quire", None)]


def _created(shop):
    shop.declare(V1)
    client, auth = shop.client(shop.app(init_schema=True))
    for name, bio in ROWS:
        assert client.post("/rest/entities/Author", json={"name": name, "bio": bio},
                           headers=auth).status_code == 201
    return shop


def _search(shop, q):
    client, auth = shop.client()
    response = client.get("/rest/entities/Author/search", query_string={"q": q}, headers=auth)
    return response.status_code, response.json


def _names(shop, q):
    status, body = _search(shop, q)
    assert status == 200, body
    return [row["name"] for row in body]


def _full_text_indexes(shop):
    return sorted(name for name in columns(shop, "author").indexes if name.endswith("_fts"))


def test_migrate_creates_the_index_on_an_existing_database(shop, capsys):
    _created(shop).declare(SEARCHED)
    shop.app()      # a missing index only warns at start
    if not PG_URL:      # without its FTS table SQLite cannot search: said, not a 500
        status, body = _search(shop, "vellum")
        assert status == 503 and "restsvc migrate" in body["details"]
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    (index,) = _full_text_indexes(shop)
    assert f"create index {index}" in output
    assert shop.migrate(capsys=capsys) == (0, "nothing to do: the database matches the model\n")
    # The rows written before are in it, the name (A) above the bio (B).
    assert _names(shop, "vellum") == ["Ann Vellum", "Bob Parchment"]
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"name": "Di Vellum"},
                       headers=auth).status_code == 201
    assert _names(shop, "vellum")[-1] == "Bob Parchment"
    assert len(_names(shop, "vellum")) == 3


def test_a_changed_declaration_replaces_the_index_without_asking(shop, capsys):
    _created(shop).declare(SEARCHED)
    assert shop.migrate(capsys=capsys)[0] == 0
    (old,) = _full_text_indexes(shop)
    shop.declare(SEARCHED.replace('{"name": "A", "bio": "B"}', '{"name": "D", "bio": "A"}'))
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    (new,) = _full_text_indexes(shop)
    assert new != old
    assert f"drop index {old} (a full-text index no longer declared)" in output
    # The bio now weighs more than the name.
    assert _names(shop, "vellum") == ["Bob Parchment", "Ann Vellum"]
    # Searchable no more: the index goes.
    shop.declare(V1)
    assert shop.migrate(capsys=capsys)[0] == 0
    assert _full_text_indexes(shop) == []
    if not PG_URL:      # nor is any of its FTS5 tables left
        assert shop.sql("SELECT name FROM sqlite_master WHERE name LIKE '%fts%'") == []


def test_a_table_rebuild_keeps_the_index_in_step(shop, capsys):
    _created(shop).declare(SEARCHED)
    assert shop.migrate(capsys=capsys)[0] == 0
    shop.declare(SEARCHED.replace("max_length=50", "max_length=200"))
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert ("rebuild table author" in output) == (not PG_URL)
    assert _names(shop, "parchment") == ["Bob Parchment", "Ann Vellum"]
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"name": "Parchment " + "x" * 100},
                       headers=auth).status_code == 201
    assert len(_names(shop, "parchment")) == 3
    assert shop.migrate(capsys=capsys) == (0, "nothing to do: the database matches the model\n")


def test_renaming_a_searchable_attribute_moves_its_index(shop, capsys):
    _created(shop).declare(SEARCHED)
    assert shop.migrate(capsys=capsys)[0] == 0
    (old,) = _full_text_indexes(shop)
    shop.declare(SEARCHED.replace("bio = ", "about = ").replace(
        '"bio": "B"}', '"about": "B"}, renames={"about": "bio"}'))
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    (new,) = _full_text_indexes(shop)
    assert new != old and "rename column author.bio to about" in output
    assert _names(shop, "vellum") == ["Ann Vellum", "Bob Parchment"]
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"name": "Eve", "about": "vellum"},
                       headers=auth).status_code == 201
    assert sorted(_names(shop, "vellum")) == ["Ann Vellum", "Bob Parchment", "Eve"]
    assert shop.migrate(capsys=capsys) == (0, "nothing to do: the database matches the model\n")
