"""Substring search on its trigram index (issue 24): ``contains`` and
``endsWith`` on an indexed string attribute use the index (EXPLAIN shows it),
answer exactly what the scan answers for every input, and writes keep the
index in step; on SQLite (FTS5) and PostgreSQL (pg_trgm)."""
import json
import random
import re

import pytest

from conftest import PG_URL
from restsvc.db import is_sqlite
from restsvc.schema import trigram
from schema_support import authors_containing, older_substring_index, substring_index
from schema_support import shop  # noqa: F401  (the fixture)
from test_database import plan_of, statements_of

# Names that make LIKE, FTS5 queries and case folding trip: wildcards and the
# escape character, quotes, FTS5 syntax, and letters whose lower case is
# longer (İ), context-dependent (Σ) or outside the ASCII that LOWER() folds.
AWKWARD = [
    "100% Cotton_Wear", "50%_off!!", "Bang! Bang!", "O'Brien & \"Sons\"", 'Say "hi" NEAR x',
    "back\\slash\\path", "Ünïcödé Überlänge", "İSTANBUL İnşaat", "ΣΊΣΥΦΟΣ Σοφός",
    "Straße STRASSE", "emoji 🚀 rocket 🚀", "e\u0301 combining café", "AND OR NOT *",
    "tab\tand  spaces", "a_b%c!d", "ABC abc AbC", "x" * 40, "Zoë Ærøskøbing",
]


def _search(client, auth, prop, op, value, entity="Customer", **params):
    query = {"filter": json.dumps({"conditions": [
        {"property": prop, "operator": op, "value": value}]}), "sort": "name", **params}
    response = client.get(f"/rest/entities/{entity}/search", query_string=query, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return [row["id"] for row in response.json]


def _add(client, auth, names):
    ids = []
    for number, name in enumerate(names):
        response = client.post("/rest/entities/Customer", headers=auth, json={
            "name": name, "email": f"{name[:20]}.{number}@Example.COM".replace(" ", "_")})
        assert response.status_code == 201, response.get_data(as_text=True)
        ids.append(response.json["id"])
    return ids


def _indexed_and_scanned(app, client, auth, op, value, monkeypatch):
    """The ids a search on ``name`` answers with the trigram index and without it.
    PostgreSQL runs the request's own statement twice, its planner told once
    to take no index but the trigram one and once to take no index at all."""
    if is_sqlite(app.database):
        indexed = _search(client, auth, "name", op, value)
        with monkeypatch.context() as patch:
            patch.setattr(trigram, "present", lambda database: {})
            return indexed, _search(client, auth, "name", op, value)
    query = json.dumps({"conditions": [{"property": "name", "operator": op, "value": value}]})
    _, statements = statements_of(app, client, f"/rest/entities/Customer/search?filter="
                                  f"{_quote(query)}&sort=name", auth)
    (sql, params), = statements
    answers = []
    for off, used in ((("seqscan", "indexscan"), True),
                      (("seqscan", "indexscan", "bitmapscan"), False)):
        with app.database.atomic():
            for kind in off:
                app.database.execute_sql(f"SET LOCAL enable_{kind} = off")
            plan = " ".join(row[0] for row in app.database.execute_sql(f"EXPLAIN {sql}", params))
            assert ("customer_name_trgm" in plan) == used, plan
            answers.append([str(_uuid(row[0])) for row in app.database.execute_sql(sql, params)])
    return answers


def _quote(text):
    from urllib.parse import quote
    return quote(text)


def _uuid(value):
    import uuid
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _statement(app, client, auth, prop, op, value):
    """(sql, params) of the search's one statement."""
    query = _quote(json.dumps({"conditions": [{"property": prop, "operator": op,
                                               "value": value}]}))
    _, statements = statements_of(app, client,
                                  f"/rest/entities/Customer/search?filter={query}", auth)
    (sql, params), = statements
    return sql, params


def _plan(app, client, auth, prop, op, value):
    sql, params = _statement(app, client, auth, prop, op, value)
    if is_sqlite(app.database):
        return sql, plan_of(app, sql, params)
    with app.database.atomic():     # a tiny table: only whether the index can serve it
        for kind in ("seqscan", "indexscan"):
            app.database.execute_sql(f"SET LOCAL enable_{kind} = off")
        rows = app.database.execute_sql(f"EXPLAIN {sql}", params).fetchall()
    return sql, " | ".join(row[0] for row in rows)


@pytest.mark.parametrize("prop", ["name", "email"])
@pytest.mark.parametrize("op", ["contains", "endsWith"])
def test_contains_and_ends_with_use_the_trigram_index(app, client, auth, prop, op):
    _add(client, auth, ["Trigram Target"])
    value = "GRAM TARGET" if prop == "name" else "GRAM_TARGET.0@example"
    sql, plan = _plan(app, client, auth, prop, op, value)
    index = substring_index("customer", prop)
    if is_sqlite(app.database):     # the FTS5 match in the column's FTS column, then the rows by rowid
        assert f'"{index}" MATCH' in sql
        column = trigram.present(app.database)[index][prop]      # v0, v1, ...: prop's alone
        assert f'{{{column}}} : "{value.lower()}"' in _statement(app, client, auth, prop, op,
                                                                 value)[1]
        assert re.search(r"SCAN \w+ VIRTUAL TABLE INDEX \d+:M", plan), plan
        assert "USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan
    else:
        assert re.search(rf"Bitmap Index Scan on {index}\b", plan), plan


def test_a_value_shorter_than_a_trigram_scans_and_still_matches(app, client, auth):
    created, = _add(client, auth, ["Qz Short"])
    if is_sqlite(app.database):     # PostgreSQL's planner weighs a GIN scan of no trigram itself
        assert "_trgm" not in "".join(_plan(app, client, auth, "name", "contains", "qz"))
    assert created in _search(client, auth, "name", "contains", "QZ")


def test_every_awkward_value_finds_what_the_scan_finds(app, client, auth, monkeypatch):
    """Property-style: values cut from awkward names (wildcards, escapes,
    quotes, FTS5 syntax, Unicode, mixed case), answered with the index and
    without it, must be the same rows; and the rows a plain substring test in
    Python expects for ASCII values."""
    ids = dict(zip(_add(client, auth, AWKWARD), AWKWARD))
    pick = random.Random(24)
    values = ["%", "_", "!", "!!", "%_", "'", '"', '""', "\\", "*", "🚀", "a_b", "0%_",
              "% c", "_w", "ss", "ß", "STRASSE", "straße", "İ", "i̇", "σοφός", "ΣΟΦΌΣ",
              "é", "e\u0301", "rocket 🚀", "NEAR", "AND OR", "\tand", "xxxx", "nothing here"]
    for name in AWKWARD:
        for _ in range(3):
            start = pick.randrange(len(name))
            piece = name[start:start + pick.randrange(1, 9)]
            values.append("".join(c.upper() if pick.random() < 0.5 else c for c in piece))
    found_any = 0
    for value in values:
        for op in ("contains", "endsWith"):
            indexed, scanned = _indexed_and_scanned(app, client, auth, op, value, monkeypatch)
            assert indexed == scanned, (op, value)
            found_any += bool(indexed)
            if value.isascii() and op == "contains":
                expected = {i for i, n in ids.items() if value.lower() in n.lower()}
                assert expected <= set(indexed), value
    assert found_any > len(values)         # the values do find rows


@pytest.mark.parametrize("path, value", [
    ("customer.name", "LER"),               # through a to-one reference (a join)
    ("lines.product.name", "ANEL"),         # through a collection (EXISTS)
])
def test_paths_to_an_indexed_attribute_use_it_and_match_the_scan(client, auth, path, value,
                                                                   monkeypatch):
    orders = client.get("/rest/entities/Order?fetchPlan=order-with-details&limit=1000",
                        headers=auth).json
    if path == "customer.name":
        expected = {o["id"] for o in orders if value.lower() in o["customer"]["name"].lower()}
    else:
        expected = {o["id"] for o in orders
                    if any(value.lower() in line["product"]["name"].lower()
                           for line in o["lines"])}
    assert expected
    found = _search(client, auth, path, "contains", value, entity="Order", sort="number")
    assert set(found) == expected
    with monkeypatch.context() as patch:
        patch.setattr(trigram, "present", lambda database: {})
        assert _search(client, auth, path, "contains", value, entity="Order",
                       sort="number") == found


def test_writes_keep_the_index_in_step(app, client, auth):
    created, = _add(client, auth, ["Alpha Quokka"])
    assert _search(client, auth, "name", "contains", "A QUOK") == [created]
    response = client.put(f"/rest/entities/Customer/{created}", headers=auth,
                          json={"name": "Beta Wombat"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert _search(client, auth, "name", "contains", "quokka") == []
    assert _search(client, auth, "name", "endsWith", "WOMBAT") == [created]
    response = client.put(f"/rest/entities/Customer/{created}", headers=auth,
                          json={"email": None})
    assert _search(client, auth, "email", "contains", "example") == _search(
        client, auth, "email", "contains", "example")
    assert client.delete(f"/rest/entities/Customer/{created}", headers=auth).status_code == 204
    assert _search(client, auth, "name", "contains", "wombat") == []        # soft deleted
    assert _search(client, auth, "name", "contains", "wombat", includeDeleted="true") == [
        created]
    assert client.post(f"/rest/entities/Customer/{created}/restore",
                       headers=auth).status_code == 200
    assert _search(client, auth, "name", "contains", "wombat") == [created]
    assert client.delete(f"/rest/entities/Customer/{created}", headers=auth).status_code == 204
    assert client.post(f"/rest/entities/Customer/{created}/purge",
                       headers=auth).status_code == 204
    assert _search(client, auth, "name", "contains", "wombat", includeDeleted="true") == []
    if is_sqlite(app.database):     # one FTS row per row, holding exactly the lowered values
        database, held = app.database, trigram.present(app.database)["customer_trgm"]
        assert sorted(held) == ["address_city", "email", "name"]
        fts = ", ".join(held[column] for column in sorted(held))
        assert database.execute_sql(f"SELECT rowid, {fts} FROM customer_trgm ORDER BY rowid"
                                    ).fetchall() == database.execute_sql(
            "SELECT rowid, unicode_lower(address_city), unicode_lower(email), unicode_lower(name) "
            "FROM customer ORDER BY rowid").fetchall()


def test_without_trigram_support_the_start_says_so_and_filters_scan(make_app, monkeypatch,
                                                                   caplog):
    monkeypatch.setattr(trigram, "support", lambda database: trigram.Support(
        False, "the pg_trgm extension is not installed on the server"))
    app = make_app()
    assert "substring search: the pg_trgm extension is not installed" in caplog.text
    from werkzeug.test import Client
    from conftest import get_token
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    created, = _add(client, auth, ["Scanned Platypus"])
    assert _search(client, auth, "name", "contains", "PLATYPUS") == [created]


@pytest.mark.skipif(bool(PG_URL), reason="the FTS5 tables are SQLite's")
def test_sqlite_fts_tables_are_no_tables_of_the_model(app):
    from restsvc.schema.inspect import inspect_database
    tables = inspect_database(app.database)
    assert not any("_trgm" in name for name in tables)
    assert [name for name in tables["customer"].indexes if "_trgm" in name] == ["customer_trgm"]
    assert tables["customer"].indexes["customer_trgm"].covers == ("name", "email", "address_city")


INDEXED = """
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50, index=True)
"""


def test_migrate_gives_an_existing_database_its_trigram_index(shop, capsys, caplog):
    from schema_support import columns
    shop.declare(INDEXED)
    client, auth = shop.client(shop.app(init_schema=True))
    for name in ("Ann Oakley", "Bob Oakes", "Cy Young"):
        assert client.post("/rest/entities/Author", json={"name": name},
                           headers=auth).status_code == 201
    name = substring_index("author", "name")
    index = columns(shop, "author").indexes[name]
    for sql in index.drop or (f'DROP INDEX "{name}"',):     # as an older restsvc made it
        shop.sql(sql)
    assert name not in columns(shop, "author").indexes
    shop.app()        # starts, and says what is missing
    assert f"index {name} missing" in caplog.text
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert f"create index {name}" in output
    assert name in columns(shop, "author").indexes
    assert authors_containing(shop, "OAK") == ["Ann Oakley", "Bob Oakes"]
    assert shop.migrate(capsys=capsys)[1].startswith("nothing to do")


def test_a_table_rebuild_keeps_the_trigram_index_in_step(shop, capsys):
    """SQLite rebuilds a table to widen a column (new rowids, triggers dropped
    with the old table): the FTS table is made again from the rows."""
    shop.declare(INDEXED)
    client, auth = shop.client(shop.app(init_schema=True))
    for name in ("Ann Oakley", "Bob Oakes"):
        assert client.post("/rest/entities/Author", json={"name": name},
                           headers=auth).status_code == 201
    shop.sql("DELETE FROM author WHERE name = 'Ann Oakley'")     # a gap in the rowids
    shop.declare(INDEXED.replace("max_length=50", "max_length=80"))
    code, output = shop.migrate("--no-backup", capsys=capsys)
    assert code == 0, output
    assert authors_containing(shop, "oakes") == ["Bob Oakes"]
    client, auth = shop.client()
    assert client.post("/rest/entities/Author", json={"name": "Dee Oakland"},
                       headers=auth).status_code == 201
    assert authors_containing(shop, "OAK") == ["Bob Oakes", "Dee Oakland"]


@pytest.mark.skipif(bool(PG_URL), reason="the FTS5 table is SQLite's")
def test_one_search_row_per_row_and_a_match_only_in_its_own_column(app, client, auth):
    """SQLite: one FTS row per customer whatever its indexed columns hold
    (NULLs included); a ``contains`` on ``name`` is narrowed by its own FTS
    column: a row whose email alone holds the text is not among the match's
    rows (the LIKE would drop it, but the match never reads it)."""
    created = []
    for body in ({"name": "Wallaby Keeper", "email": "keeper@example.com"},
                 {"name": "Someone Else", "email": "wallaby.keeper@example.com"},
                 {"name": "Nomail Nocity"}):
        response = client.post("/rest/entities/Customer", headers=auth, json=body)
        assert response.status_code == 201, response.get_data(as_text=True)
        created.append(response.json["id"])
    in_name, in_email, _ = created
    database = app.database
    count = lambda sql: database.execute_sql(sql).fetchone()[0]     # noqa: E731
    assert count("SELECT count(*) FROM customer_trgm") == count("SELECT count(*) FROM customer")
    assert _search(client, auth, "name", "contains", "WALLABY") == [in_name]
    assert _search(client, auth, "email", "contains", "WALLABY") == [in_email]
    sql, params = _statement(app, client, auth, "name", "contains", "WALLABY")
    query, = [param for param in params if isinstance(param, str) and param.startswith("{")]
    rowids = {row[0] for row in database.execute_sql(
        "SELECT rowid FROM customer_trgm WHERE customer_trgm MATCH ?", (query,))}
    by_id = lambda entity_id: database.execute_sql(     # noqa: E731
        "SELECT rowid FROM customer WHERE id = ?", (entity_id.replace("-", ""),)).fetchone()[0]
    assert rowids == {by_id(in_name)}
    assert database.execute_sql("SELECT count(*) FROM customer_trgm WHERE customer_trgm MATCH "
                                "'\"wallaby\"'").fetchone()[0] == 2     # unrestricted: both rows


@pytest.mark.skipif(bool(PG_URL), reason="the per-column FTS tables were SQLite's")
def test_migrate_replaces_the_per_column_tables_of_before_without_asking(shop, capsys):
    """A database an older restsvc made (one FTS table per indexed column):
    plain ``migrate`` makes the table's one FTS table and drops the old ones
    (derived data, no ``--allow-destructive``); the answers stay the same."""
    from schema_support import columns
    shop.declare(INDEXED.replace(
        "index=True)", "index=True)\n    city = peewee.CharField(max_length=50, index=True, "
                       "null=True)"))
    client, auth = shop.client(shop.app(init_schema=True))
    for name, city in (("Ann Oakley", "Oakland"), ("Bob Oakes", None), ("Cy Young", "Soak")):
        assert client.post("/rest/entities/Author", json={"name": name, "city": city},
                           headers=auth).status_code == 201
    for sql in columns(shop, "author").indexes["author_trgm"].drop:
        shop.sql(sql)
    for column in ("name", "city"):
        for sql in older_substring_index("author", column):
            shop.sql(sql)
    assert {"author_name_trgm", "author_city_trgm"} <= set(columns(shop, "author").indexes)
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "create index author_trgm" in output
    assert "drop index author_name_trgm (replaced by author_trgm)" in output
    assert "drop index author_city_trgm (replaced by author_trgm)" in output
    assert "destructive" not in output
    indexes = columns(shop, "author").indexes
    assert [name for name in indexes if name.endswith("_trgm")] == ["author_trgm"]
    assert indexes["author_trgm"].covers == ("name", "city")
    assert shop.sql("SELECT name FROM sqlite_master WHERE name LIKE 'author\\_%\\_trgm%' "
                    "ESCAPE '\\'") == []
    assert shop.sql("SELECT count(*) FROM author_trgm") == [(3,)]
    assert authors_containing(shop, "OAK") == ["Ann Oakley", "Bob Oakes"]
    assert authors_containing(shop, "OAK", "city") == ["Oakland", "Soak"]
    assert shop.migrate(capsys=capsys)[1].startswith("nothing to do")


def test_a_newly_indexed_attribute_joins_the_substring_index(shop, capsys):
    """Indexing one more string attribute: ``migrate`` makes the index again
    with it (SQLite: the one FTS table, now of both columns), without asking."""
    from schema_support import columns
    with_city = INDEXED.replace("index=True)", "index=True)\n    city = peewee.CharField("
                                "max_length=50, null=True%s)")
    shop.declare(with_city % "")
    client, auth = shop.client(shop.app(init_schema=True))
    for name, city in (("Ann Oakley", "Oakland"), ("Cy Young", "Soak")):
        assert client.post("/rest/entities/Author", json={"name": name, "city": city},
                           headers=auth).status_code == 201
    shop.declare(with_city % ", index=True")
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    assert "destructive" not in output
    if not PG_URL:
        assert "recreate index author_trgm" in output
        assert columns(shop, "author").indexes["author_trgm"].covers == ("name", "city")
    assert authors_containing(shop, "OAK", "city") == ["Oakland", "Soak"]
    assert authors_containing(shop, "OAK") == ["Ann Oakley"]
    assert shop.migrate(capsys=capsys)[1].startswith("nothing to do")
