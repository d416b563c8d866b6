"""Bulk writes (issue 41): the rows of one bulk create go to each table in a
bounded number of statements whatever the row count (data/write/pending.py:
one multi-row INSERT per column set and 32,766 parameters), and write
exactly what the same creates made one at a time write."""
import re

import pytest

from werkzeug.test import Client

from conftest import at_once, demo_id, statements_sent
from restsvc.data.write.history import HistoryItem
from restsvc.events import outbox
from restsvc.security import gate
from schema_support import columns, substring_index
from schema_support import shop as shop  # noqa: F401  (the fixture)

CUSTOMER = demo_id("customer", 3)
_INSERT = re.compile(r'\s*INSERT INTO "?(\w+)"?', re.IGNORECASE)


def _customers(count, tag):
    return [{"name": f"Bulk {tag} {i:04d}", "email": f"bulk-{tag}-{i}@example.com",
             "grade": ("BRONZE", "SILVER", "GOLD")[i % 3], "birthDate": "1980-01-02",
             "address": {"city": f"Town {tag} {i % 7}", "street": f"{i} Main St"}}
            for i in range(count)]


def _bulk(client, auth, bodies):
    response = client.post("/rest/entities/Customer", headers=auth, json=bodies)
    assert response.status_code == 201, response.json
    return [row["id"] for row in response.json]


def test_a_bulk_create_writes_each_table_in_one_statement_whatever_its_size(
        app, client, auth, monkeypatch):
    counts = {size: statements_sent(app, monkeypatch,
                                     lambda size=size: _bulk(client, auth, _customers(size, size)),
                                     _INSERT)
              for size in (3, 1000)}
    for size in (3, 1000):
        assert counts[size] == {"customer": 1, "history_item": 1, "restsvc_event": 1}, counts


def test_a_bulk_create_asks_for_its_tenant_once_whatever_its_size(app, client, auth, monkeypatch):
    """The demo's Customer is tenant-scoped: a global caller's rows go to the
    default tenant, whose existence is asked once per request, not per row
    (each request here has its token read again: else the caller's next
    requests do not ask again, test_tenants.py)."""
    tenant_reads = re.compile(r'SELECT .* FROM "(restsvc_tenant)"')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gate, "RECHECK_SECONDS", 0)
        for size in (3, 1000):
            counts = statements_sent(app, monkeypatch, lambda size=size: _bulk(
                client, auth, _customers(size, f"t{size}")), tenant_reads)
            assert counts == {"restsvc_tenant": 1}, counts


def _written(client, auth, ids):
    """What the creates of ``ids`` left: the rows and their history items,
    without what differs by row (ids, times, names)."""
    rows = []
    for entity_id in ids:
        row = client.get(f"/rest/entities/Customer/{entity_id}", headers=auth).json
        items = HistoryItem.select().where(HistoryItem.entityId == entity_id)
        rows.append((
            {key: value for key, value in row.items() if key not in (
                "id", "name", "_instanceName", "email", "createdDate", "lastModifiedDate",
                "address")},
            [(item.entityName, item.kind, item.username,
              sorted(change["name"] for change in item.changes)) for item in items]))
    return rows


def test_a_bulk_writes_what_the_same_creates_one_at_a_time_write(app, client, auth):
    start = outbox.position(app.database)
    alone = []
    for body in _customers(4, "alone"):
        response = client.post("/rest/entities/Customer", headers=auth, json=body)
        assert response.status_code == 201, response.json
        alone.append(response.json["id"])
    together = _bulk(client, auth, _customers(4, "together"))
    assert _written(client, auth, together) == _written(client, auth, alone)
    outbox.assign(app.database)
    events = outbox.read(app.database, start)
    shape = [(e["entity"], e["kind"], e["changed"], e["version"]) for e in events]
    assert [e["entityId"] for e in events] == alone + together
    assert shape[:4] == shape[4:]
    found = client.get("/rest/entities/Customer/search", headers=auth, query_string={
        "filter": '{"conditions": [{"property": "address.city", "operator": "contains", '
                  '"value": "own together 3"}]}'}).json
    assert [row["id"] for row in found] == [together[3]]


def test_creates_and_updates_of_one_bulk_keep_their_order(app, client, auth):
    start = outbox.position(app.database)
    first, last = _customers(2, "mixed")
    response = client.post("/rest/entities/Customer", headers=auth, json=[
        first, {"id": CUSTOMER, "name": "Renamed in a bulk"}, last])
    assert response.status_code == 201, response.json
    ids = [row["id"] for row in response.json]
    outbox.assign(app.database)
    events = outbox.read(app.database, start)
    assert [(e["entityId"], e["kind"]) for e in events] == [
        (ids[0], "CREATE"), (CUSTOMER, "UPDATE"), (ids[2], "CREATE")]


def test_a_refused_row_of_a_bulk_writes_nothing_and_answers_as_before(app, client, auth):
    bodies = _customers(3, "twice")
    bodies[0]["id"] = bodies[2]["id"] = "01a226c0-09e6-7076-9cc9-9cac1191b05f"    # twice
    before = outbox.position(app.database)
    response = client.post("/rest/entities/Customer", headers=auth, json=bodies)
    assert response.status_code == 400, response.json
    assert response.json["error"] == "Entity creation failed"
    found = client.get("/rest/entities/Customer/search", headers=auth, query_string={
        "filter": '{"conditions": [{"property": "name", "operator": "startsWith", '
                  '"value": "Bulk twice"}]}'}).json
    assert found == [] and outbox.position(app.database) == before


HISTORY_TRIGRAM = substring_index("history_item", "entityName")
HISTORIED = """
@entity(instance_name="name", history=True)
class Author(Entity):
    name = peewee.CharField(max_length=50, index=True)
"""


def test_history_items_get_no_substring_index_and_migrate_drops_an_old_one(shop, capsys):
    from restsvc.schema import trigram
    shop.declare(HISTORIED)
    app = shop.app(init_schema=True)
    assert HISTORY_TRIGRAM not in columns(shop, "history_item").indexes
    assert substring_index("author", "name") in columns(shop, "author").indexes
    # A database an older restsvc made: the index is there, kept by its triggers.
    support = trigram.support(app.database)
    (_, _, create, _, _), = trigram.declared_indexes(app.database, HistoryItem,
                                                     [HistoryItem.entityName], support)
    for sql in create:
        shop.sql(sql)
    assert HISTORY_TRIGRAM in columns(shop, "history_item").indexes
    code, output = shop.migrate(capsys=capsys)      # no --allow-destructive needed
    assert code == 0, output
    assert f"drop index {HISTORY_TRIGRAM} (a substring index no longer declared)" in output
    assert HISTORY_TRIGRAM not in columns(shop, "history_item").indexes
    client, auth = shop.client(shop.app())
    assert client.post("/rest/entities/Author", json={"name": "Ann Oakley"},
                       headers=auth).status_code == 201
    found = client.get("/rest/entities/HistoryItem/search", headers=auth, query_string={
        "filter": '{"conditions": [{"property": "entityName", "operator": "contains", '
                  '"value": "utho"}]}'}).json
    assert [item["entityName"] for item in found] == ["Author"]


def test_an_application_that_wants_the_history_substring_index_declares_it(
        shop, capsys, monkeypatch):
    monkeypatch.setattr(HistoryItem, "substring_search", True)
    shop.declare(HISTORIED)
    shop.app(init_schema=True)
    assert HISTORY_TRIGRAM in columns(shop, "history_item").indexes


def _in_opposite_orders(app, auth, entity, rows_of, writers=8, method="PUT"):
    """The statuses of ``writers`` bulk PUTs (or POSTs) of ``entity`` started
    at once, writer ``n`` sending ``rows_of(n)``, every other writer in reverse."""
    def write(number):
        rows = rows_of(number)
        return Client(app).open(f"/rest/entities/{entity}", method=method, headers=auth,
                                json=rows if number % 2 else rows[::-1]).status_code
    return at_once(write, writers)


def _stored(client, auth, ids):
    """The customers ``ids`` as stored (their local attributes and versions)."""
    return [client.get(f"/rest/entities/Customer/{entity_id}?fetchPlan=_local", headers=auth).json
            for entity_id in ids]


def test_bulk_updates_of_the_same_rows_in_opposite_orders_all_succeed(app, client, auth):
    """Concurrent bulk updates lock their rows in id order before writing
    (on PostgreSQL; SQLite writes one transaction at a time): updates of the
    same rows listed in opposite orders neither deadlock nor lose a write."""
    ids = _bulk(client, auth, _customers(20, "locks"))
    statuses = _in_opposite_orders(app, auth, "Customer", lambda number: [
        {"id": entity_id, "email": f"w{number}-{i}@example.com"} for i, entity_id in enumerate(ids)])
    assert statuses == [200] * 8
    stored = _stored(client, auth, ids)
    assert {row["version"] for row in stored} == {9}
    winners = {row["email"].split("-")[0] for row in stored}     # one writer's rows, whole
    assert len(winners) == 1, winners


def test_bulks_that_name_a_row_twice_or_also_create_rows_in_opposite_orders_all_succeed(
        app, client, auth):
    """A bulk whose updates are written one by one, in the body's order (a
    row named twice; updates among creates), still locks the rows it updates
    in id order before the first is written: concurrent ones neither
    deadlock nor lose a write."""
    ids = _bulk(client, auth, _customers(12, "twice"))
    statuses = _in_opposite_orders(app, auth, "Customer", lambda number: [
        {"id": entity_id, "email": f"w{number}-{i}-{time}@example.com"}
        for time in ("a", "b") for i, entity_id in enumerate(ids)])
    assert statuses == [200] * 8
    stored = _stored(client, auth, ids)
    assert {row["version"] for row in stored} == {17}
    assert len({row["email"].split("-")[0] for row in stored}) == 1     # one writer's rows, whole

    statuses = _in_opposite_orders(app, auth, "Customer", lambda number: [
        {"id": entity_id, "grade": ("SILVER", "GOLD")[number % 2]} for entity_id in ids] + [
        {"name": f"New {number}-{i}", "email": f"new-{number}-{i}@example.com"} for i in range(3)],
        method="POST")
    assert statuses == [201] * 8
    stored = _stored(client, auth, ids)
    assert {row["version"] for row in stored} == {25}
    assert len({row["grade"] for row in stored}) == 1
    created = client.get("/rest/entities/Customer/search", headers=auth, query_string={
        "filter": '{"conditions":[{"property":"name","operator":"startsWith","value":"New "}]}'})
    assert len(created.json) == 24


_UPDATE = re.compile(r'\s*UPDATE "?(\w+)"?', re.IGNORECASE)


def test_a_bulk_update_of_rows_taking_their_own_values_is_one_statement(
        app, client, auth, monkeypatch):
    """Each row its own values, of every kind of column (text, enum, date,
    uuid, nulls among them): one UPDATE whatever the number of rows, each
    row left with its own values and a history item of its own changes."""
    for size in (3, 40):
        ids = _bulk(client, auth, _customers(size, f"own{size}"))
        rows = [{"id": entity_id, "email": f"own-{size}-{i}@example.com",
                 "grade": (None, "SILVER", "GOLD")[i % 3],
                 "birthDate": None if i % 4 == 0 else f"19{50 + i}-03-0{1 + i % 9}",
                 "userId": None if i % 2 else f"00000000-0000-4000-8000-{i:012d}"}
                for i, entity_id in enumerate(ids)]
        counts = statements_sent(app, monkeypatch, lambda rows=rows: client.put(
            "/rest/entities/Customer", headers=auth, json=rows), _UPDATE)
        assert counts == {"customer": 1}, counts
        for i, row in enumerate(rows):
            stored = client.get(f"/rest/entities/Customer/{row['id']}?fetchPlan=_local",
                                headers=auth).json
            assert {name: stored.get(name) for name in row} == row
            assert stored["version"] == 2
            items = [item.changes for item in HistoryItem.select().where(
                HistoryItem.entityId == row["id"], HistoryItem.kind == "UPDATE")]
            assert len(items) == 1
            email = next(change for change in items[0] if change["name"] == "email")
            assert (email["oldValue"], email["newValue"]) == (
                f"bulk-own{size}-{i}@example.com", row["email"])


def test_a_bulk_update_of_numbers_and_of_rows_keyed_by_numbers_keeps_each_rows_values(client, auth):
    """Decimal prices, integer ids the database assigns (Tag), text ids (Country)."""
    for entity, bodies, change in (
            ("Product", [{"name": f"Priced {i}", "price": i + 1} for i in range(3)],
             lambda i: {"price": float(f"{i + 1}.{i}5"), "description": None if i % 2 else f"d{i}"}),
            ("Tag", [{"name": f"Numbered {i}"} for i in range(3)],
             lambda i: {"name": f"Renumbered {i}", "internal": bool(i % 2)}),
            ("Country", [{"id": f"Y{i}", "name": f"Land {i}"} for i in range(3)],
             lambda i: {"name": f"Country {i}"})):
        created = client.post(f"/rest/entities/{entity}", json=bodies, headers=auth)
        assert created.status_code == 201, created.json
        rows = [{"id": row["id"], **change(i)} for i, row in enumerate(created.json)]
        response = client.put(f"/rest/entities/{entity}", json=rows, headers=auth)
        assert response.status_code == 200, response.json
        for row in rows:
            stored = client.get(f"/rest/entities/{entity}/{row['id']}?fetchPlan=_local",
                                headers=auth).json
            assert {name: stored.get(name) for name in row} == row, stored


def test_bulk_updates_of_the_same_orders_with_their_lines_in_opposite_orders_all_succeed(
        app, client, auth):
    """Rows written one by one (each order replaces its lines) are still
    locked together, in id order, before the first is written."""
    product = demo_id("product", 0)
    created = client.post("/rest/entities/Order", headers=auth, json=[
        {"number": f"LOCK-{i}", "date": "2025-01-02", "customer": {"id": CUSTOMER},
         "lines": [{"product": {"id": product}, "quantity": 1}]} for i in range(12)])
    assert created.status_code == 201, created.json
    ids = [row["id"] for row in created.json]
    statuses = _in_opposite_orders(app, auth, "Order", lambda number: [
        {"id": entity_id, "lines": [{"product": {"id": product}, "quantity": 10 + number}]}
        for entity_id in ids])
    assert statuses == [200] * 8
    quantities = {line["quantity"] for entity_id in ids for line in client.get(
        f"/rest/entities/Order/{entity_id}?fetchPlan=order-with-details", headers=auth).json["lines"]}
    assert len(quantities) == 1, quantities      # one writer's lines, whole
