"""Schema evolution on a throwaway application whose model changes between
steps (tests/schema_support.py), on SQLite or on $RESTSVC_TEST_DATABASE_URL."""
import pytest

from conftest import PG_URL
from schema_support import columns, shop  # noqa: F401  (the fixture)
from restsvc.schema import SchemaMismatch

V1 = """
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50)
"""


def created(shop, names=("Ann", "Bob", "Cy")):
    """Version 1 made by init-schema, with rows written through the REST API."""
    shop.declare(V1)
    client, auth = shop.client(shop.app(init_schema=True))
    for name in names:
        assert client.post("/rest/entities/Author", json={"name": name},
                           headers=auth).status_code == 201
    return shop


def authors(shop):
    client, auth = shop.client()
    response = client.get("/rest/entities/Author?sort=name", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.json


def test_start_refuses_a_database_missing_a_column_naming_it_and_the_command(shop):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    with pytest.raises(SchemaMismatch) as refused:
        shop.app()
    assert "author.country: column missing" in str(refused.value)
    assert "restsvc migrate" in str(refused.value)


def test_migrate_adds_a_nullable_column_and_the_rows_stay(shop, capsys):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "add column author.country" in output
    assert [(a["name"], a.get("country")) for a in authors(shop)] == [
        ("Ann", None), ("Bob", None), ("Cy", None)]


def test_migrate_adds_a_required_column_with_its_default_to_a_table_with_rows(shop, capsys):
    created(shop).declare(V1 + "    rank = peewee.IntegerField(default=5)\n")
    assert shop.migrate(capsys=capsys)[0] == 0
    assert {a["rank"] for a in authors(shop)} == {5}
    # The database keeps the default: an instance still on the old model can insert.
    shop.sql("INSERT INTO author (id, version, name) VALUES ('00000000-0000-7000-8000-000000000001', 1, 'Old')")
    assert shop.sql("SELECT rank FROM author WHERE name = 'Old'") == [(5,)]


def test_migrate_creates_a_new_entity(shop, capsys):
    created(shop).declare(V1 + """
@entity(instance_name="title")
class Book(Entity):
    title = peewee.CharField()
    author = peewee.ForeignKeyField(Author, null=True)
""", entities="Author, Book")
    assert shop.migrate(capsys=capsys)[0] == 0
    client, auth = shop.client()
    author = authors(shop)[0]["id"]
    response = client.post("/rest/entities/Book", json={"title": "T", "author": {"id": author}},
                           headers=auth)
    assert response.status_code == 201, response.get_data(as_text=True)


def test_a_missing_index_only_warns_at_start_and_migrate_creates_it(shop, capsys, caplog):
    created(shop).declare(V1.replace("max_length=50)", "max_length=50, index=True)"))
    shop.app()        # starts
    assert "index author_name missing" in caplog.text
    assert shop.migrate(capsys=capsys)[0] == 0
    assert "author_name" in columns(shop, "author").indexes


def test_migrate_widens_a_string(shop, capsys):
    created(shop).declare(V1.replace("max_length=50", "max_length=200"))
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert columns(shop, "author").columns["name"].type == "varchar(200)"
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"name": "x" * 150},
                       headers=auth).status_code == 201
    assert len(authors(shop)) == 4


def test_a_declared_rename_moves_the_values(shop, capsys):
    created(shop).declare("""
@entity(instance_name="fullName", renames={"fullName": "name"})
class Author(Entity):
    fullName = peewee.CharField(max_length=50, index=True)
""")
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "rename column author.name to fullName" in output
    assert [a["fullName"] for a in authors(shop)] == ["Ann", "Bob", "Cy"]


def test_dropping_a_column_needs_allow_destructive(shop, capsys):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    assert shop.migrate(capsys=capsys)[0] == 0
    shop.declare(V1)
    code, output = shop.migrate(capsys=capsys)
    assert code == 2
    assert "drop column author.country" in output and "--allow-destructive" in output
    assert "country" in columns(shop, "author").columns
    shop.app()     # an extra nullable column does not stop the service
    code, output = shop.migrate("--allow-destructive", "--no-backup", capsys=capsys)
    assert code == 0, output
    assert "country" not in columns(shop, "author").columns
    assert len(authors(shop)) == 3


def test_making_a_column_required_is_refused_while_rows_hold_null(shop, capsys):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    shop.migrate(capsys=capsys)
    shop.sql("UPDATE author SET country = 'NZ' WHERE name = 'Ann'")
    shop.declare(V1 + "    country = peewee.CharField(default='')\n")
    code, output = shop.migrate("--allow-destructive", capsys=capsys)
    assert code == 1
    assert "2 rows of author hold NULL in country" in output
    shop.sql("UPDATE author SET country = '' WHERE country IS NULL")
    code, output = shop.migrate("--allow-destructive", capsys=capsys)
    assert code == 0, output
    assert columns(shop, "author").columns["country"].null is False


def test_a_failing_step_leaves_the_database_as_it_was(shop, capsys, tmp_path):
    created(shop, names=("Ann", "Ann")).declare(
        V1.replace("max_length=50)", "max_length=80, unique=True)")
        + "    country = peewee.CharField(null=True)\n")
    code, output = shop.migrate(capsys=capsys)
    assert code == 1
    assert "step " in output and "failed" in output and "unique" in output.lower()
    assert "Traceback" not in output
    table = columns(shop, "author")
    assert "country" not in table.columns and table.columns["name"].type == "varchar(50)"
    if not PG_URL:     # the rebuild wrote a backup first and named it
        backup = output.split("a backup is at ")[1].split()[0]
        import sqlite3
        assert sqlite3.connect(backup).execute("SELECT COUNT(*) FROM author").fetchone() == (2,)
    shop.declare(V1)
    assert len(authors(shop)) == 2


def test_two_processes_migrating_at_once_apply_it_once(shop):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    processes = [shop.spawn() for _ in range(2)]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    assert sorted("applied" in out for out in outputs) == [False, True], outputs
    assert any("nothing to do" in out for out in outputs), outputs
    names = [name for (name,) in shop.sql("SELECT name FROM restsvc_migration")]
    assert len([name for name in names if name.endswith("-migrate")]) == 1


def test_plan_is_deterministic_and_changes_nothing(shop, capsys):
    created(shop).declare(V1.replace("max_length=50)", "max_length=50, index=True)")
                          + "    country = peewee.CharField(null=True)\n")
    first = shop.migrate("--plan", capsys=capsys)
    assert first == shop.migrate("--plan", capsys=capsys)
    assert first[0] == 0 and 'ADD COLUMN "country"' in first[1]
    assert "country" not in columns(shop, "author").columns


def test_status_shows_the_history_and_a_second_migrate_does_nothing(shop, capsys):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    assert "1 steps pending" in shop.migrate("--status", capsys=capsys)[1]
    assert shop.migrate(capsys=capsys)[0] == 0
    assert shop.migrate(capsys=capsys) == (0, "nothing to do: the database matches the model\n")
    status = shop.migrate("--status", capsys=capsys)[1]
    assert "-init-schema" in status and "-migrate" in status and "up to date" in status


def test_migrate_against_an_unreachable_database_fails_clearly(shop, capsys, tmp_path):
    from test_health import free_port
    shop.url = (f"postgresql://postgres@127.0.0.1:{free_port()}/nothing" if PG_URL
                else f"sqlite:///{tmp_path}")     # a directory, not a database file
    shop.declare(V1)
    code, output = shop.migrate(capsys=capsys)
    assert code == 1 and "Traceback" not in output
    assert "restsvc: migrate: cannot reach the database" in output


def test_migrate_waits_at_most_lock_timeout_behind_a_long_transaction(shop, capsys):
    created(shop).declare(V1 + "    country = peewee.CharField(null=True)\n")
    from restsvc.db import open_database
    database = open_database(shop.url)
    database.connect()
    try:
        with database.atomic("EXCLUSIVE") if not PG_URL else database.atomic():
            database.execute_sql("UPDATE author SET name = name")  # holds the row/table lock
            if PG_URL:
                database.execute_sql("LOCK TABLE author IN ACCESS SHARE MODE")
            code, output = shop.migrate("--lock-timeout", "1", capsys=capsys)
    finally:
        database.close()
    assert code == 1 and "Traceback" not in output
    assert "locked by another transaction for 1 s" in output


# -- the link keys of a many-to-many attribute (schema/linkkeys.py) ----------

GENRES = """
@entity(instance_name="name")
class Genre(Entity):
    id = peewee.AutoField()
    name = peewee.CharField(max_length=50)


@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50)
    genres = peewee.ManyToManyField(Genre, backref="authors")
"""
KEYS = "genres_link_keys"


def with_genres(shop):
    """Authors with genres (Ann: 2 and 1, Bob: 3, Cy: none), made through the API."""
    shop.declare(GENRES, entities="Genre, Author")
    client, auth = shop.client(shop.app(init_schema=True))
    genres = [client.post("/rest/entities/Genre", json={"name": name}, headers=auth).json["id"]
              for name in ("essay", "novel", "poem")]
    for name, chosen in (("Ann", [genres[1], genres[0]]), ("Bob", [genres[2]]), ("Cy", [])):
        assert client.post("/rest/entities/Author", headers=auth, json={
            "name": name, "genres": [{"id": genre} for genre in chosen]}).status_code == 201
    return [int(genre) for genre in genres]


def stored_genres(shop):
    """{author name: (the stored keys, the link table's keys)}."""
    stored = {name: None if keys is None else __import__("json").loads(keys)
              for name, keys in shop.sql(f"SELECT name, {KEYS} FROM author")}
    linked = {}
    for name, genre in shop.sql("SELECT a.name, l.genre_id FROM author a JOIN "
                                "author_genre_through l ON l.author_id = a.id "
                                "ORDER BY a.name, l.genre_id"):
        linked.setdefault(name, []).append(genre)
    return {name: (keys, linked.get(name)) for name, keys in stored.items()}


def drop_link_keys(shop, column=True):
    """The database as a release without stored link keys left it."""
    if PG_URL:
        shop.sql(f"DROP FUNCTION author_{KEYS}_fn() CASCADE")
    else:
        for kind in ("ins", "del", "upd"):
            shop.sql(f"DROP TRIGGER author_{KEYS}_{kind}")
    if column:
        shop.sql(f"ALTER TABLE author DROP COLUMN {KEYS}")


def test_migrate_adds_the_link_keys_column_and_its_triggers_and_fills_it(shop, capsys):
    genres = with_genres(shop)
    drop_link_keys(shop)
    with pytest.raises(SchemaMismatch, match=f"author.{KEYS}: column missing"):
        shop.app()
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert f"add column author.{KEYS}" in output
    assert f"create the triggers keeping author.{KEYS} (from author_genre_through)" in output
    assert stored_genres(shop) == {"Ann": (genres[:2], genres[:2]), "Bob": ([genres[2]],) * 2,
                                   "Cy": (None, None)}
    client, auth = shop.client()
    plan = '{"properties":["name","genres"]}'
    loaded = client.get(f"/rest/entities/Author?sort=name&fetchPlan={plan}", headers=auth).json
    assert [[int(g["id"]) for g in a["genres"]] for a in loaded] == [genres[:2], [genres[2]], []]
    answer = client.put(f"/rest/entities/Author/{loaded[2]['id']}", headers=auth,
                        json={"genres": [{"id": str(genres[2])}]})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert stored_genres(shop)["Cy"] == ([genres[2]],) * 2


def test_missing_triggers_stop_the_start_and_migrate_makes_them_and_refills(shop, capsys):
    genres = with_genres(shop)
    drop_link_keys(shop, column=False)
    shop.sql(f"DELETE FROM author_genre_through WHERE genre_id = {genres[0]}")     # now stale
    with pytest.raises(SchemaMismatch, match=f"triggers keeping author.{KEYS} "
                                             r"\(from author_genre_through\) missing"):
        shop.app()
    assert shop.migrate(capsys=capsys)[0] == 0
    assert stored_genres(shop) == {"Ann": ([genres[1]],) * 2, "Bob": ([genres[2]],) * 2,
                                   "Cy": (None, None)}
    shop.app()
    shop.sql(f"DELETE FROM author_genre_through WHERE genre_id = {genres[2]}")     # kept
    assert stored_genres(shop)["Bob"] == (None, None)


def test_a_table_rebuild_keeps_the_link_keys_and_their_triggers(shop, capsys):
    genres = with_genres(shop)
    shop.declare(GENRES.replace("name = peewee.CharField(max_length=50)\n    genres",
                                "name = peewee.CharField(max_length=50, null=True)\n    genres"),
                 entities="Genre, Author")
    code, output = shop.migrate(capsys=capsys)      # SQLite: rebuilds the author table
    assert code == 0, output
    assert stored_genres(shop)["Ann"] == (genres[:2], genres[:2])
    shop.app()
    shop.sql(f"DELETE FROM author_genre_through WHERE genre_id = {genres[1]}")
    assert stored_genres(shop)["Ann"] == ([genres[0]],) * 2


def test_an_attribute_taken_out_leaves_its_triggers_until_allow_destructive(shop, capsys):
    with_genres(shop)
    shop.declare(GENRES.replace('    genres = peewee.ManyToManyField(Genre, backref="authors")\n',
                                ""), entities="Genre, Author")
    shop.app()      # an older instance may still write links and read the column
    code, output = shop.migrate(capsys=capsys)
    assert code == 2
    assert f"drop trigger author_{KEYS}_ins" in output
    code, output = shop.migrate("--allow-destructive", "--no-backup", capsys=capsys)
    assert code == 0, output
    assert KEYS not in columns(shop, "author").columns
    assert not [name for name in columns(shop, "author").triggers if KEYS in name]
