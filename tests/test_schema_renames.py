"""A declared rename (``renames=``) of an indexed string attribute applies
without asking, by ``restsvc migrate`` and by init-schema alike, and takes the
attribute's indexes with it: its substring search keeps working and the old
column's indexes (SQLite: an FTS table and three triggers) are gone."""
import pytest

from conftest import PG_URL
from schema_support import authors_containing, columns, older_substring_index
from schema_support import shop as shop  # noqa: F401  (the fixture)

INDEXED = """
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50, index=True)
"""
RENAMED = """
@entity(instance_name="fullName", renames={"fullName": "name"})
class Author(Entity):
    fullName = peewee.CharField(max_length=%d, index=True)
"""


def created(shop):
    shop.declare(INDEXED)
    client, auth = shop.client(shop.app(init_schema=True))
    for name in ("Ann Oakley", "Bob Oakes", "Cy Young"):
        assert client.post("/rest/entities/Author", json={"name": name},
                           headers=auth).status_code == 201
    return shop


def assert_only_the_new_indexes(shop):
    """The indexes are the model's; nothing of the old column is left (on
    SQLite also no FTS table or trigger outside the inspected indexes)."""
    indexes = set(columns(shop, "author").indexes)
    assert not any(name.startswith("author_name") for name in indexes), indexes
    assert "author_fullName" in indexes
    if not PG_URL:      # the table's one FTS table, made again from the renamed column
        assert columns(shop, "author").indexes["author_trgm"].covers == ("fullName",)
        assert shop.sql("SELECT type, name FROM sqlite_master WHERE name LIKE 'author\\_name%' "
                        "ESCAPE '\\'") == []
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"fullName": "Dee Oakland"},
                       headers=auth).status_code == 201
    assert authors_containing(shop, "OAK", "fullName") == ["Ann Oakley", "Bob Oakes", "Dee Oakland"]


def test_migrate_renames_an_indexed_string_without_asking_and_keeps_its_search(shop, capsys):
    created(shop).declare(RENAMED % 50)
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "rename column author.name to fullName" in output
    assert "destructive" not in output
    assert_only_the_new_indexes(shop)
    assert shop.migrate(capsys=capsys)[1].startswith("nothing to do")


def test_init_schema_renames_an_indexed_string_leaving_nothing_behind(shop, capsys):
    created(shop).declare(RENAMED % 50)
    shop.app(init_schema=True)
    assert shop.migrate("--plan", capsys=capsys)[1].startswith("nothing to do")
    assert_only_the_new_indexes(shop)


def test_a_rename_in_a_table_rebuild_leaves_no_old_search_table(shop, capsys):
    """Renamed and widened at once (SQLite rebuilds the table, which drops
    the old index's triggers but not its FTS table)."""
    created(shop).declare(RENAMED % 80)
    code, output = shop.migrate("--no-backup", capsys=capsys)
    assert code == 0, output
    assert_only_the_new_indexes(shop)
    assert shop.migrate(capsys=capsys)[1].startswith("nothing to do")


@pytest.mark.skipif(bool(PG_URL), reason="the FTS5 tables are SQLite's")
def test_migrate_removes_the_search_table_an_earlier_rename_left_behind(shop, capsys):
    """As an earlier restsvc's init-schema left it: the column renamed (its
    plain indexes dropped first), the old (per-column) FTS table and
    triggers kept."""
    created(shop)
    for sql in columns(shop, "author").indexes["author_trgm"].drop:
        shop.sql(sql)
    for sql in older_substring_index("author", "name"):
        shop.sql(sql)
    shop.sql('DROP INDEX "author_name"')
    shop.sql('DROP INDEX "author_name_lower"')
    shop.sql('ALTER TABLE author RENAME COLUMN name TO "fullName"')
    shop.declare(RENAMED % 50)
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "drop index author_name_trgm (left from the rename of author.name)" in output
    assert_only_the_new_indexes(shop)
