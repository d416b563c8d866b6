"""What one write request may make the service write is bounded, and a busy
database is a 503 the client can retry, never a 500."""
import sqlite3

import pytest
from werkzeug.test import Client

from conftest import PG_URL, demo_id, get_token


@pytest.fixture
def small(make_app):
    c = Client(make_app({"svc.rest.max-bulk-size": 5}))
    return c, {"Authorization": f"Bearer {get_token(c)}"}


def _count(c, auth, entity):
    return c.get(f"/rest/entities/{entity}/search/count?filter={{}}", headers=auth).json


def _assert_too_many(response, limit):
    assert response.status_code == 413, response.get_data(as_text=True)
    assert response.json == {"error": "Too many entities", "details":
                             f"One request may write at most {limit} entities, composition "
                             "children included (svc.rest.max-bulk-size)"}


def test_a_bulk_create_above_the_default_limit_is_refused_and_writes_nothing(client, auth):
    before = _count(client, auth, "Customer")
    bodies = [{"name": f"bulk {i}"} for i in range(1001)]
    _assert_too_many(client.post("/rest/entities/Customer", json=bodies, headers=auth), 1000)
    assert _count(client, auth, "Customer") == before


def test_composition_children_count_towards_the_limit(small):
    c, auth = small
    order = {"number": "L1", "date": "2025-01-01", "customer": {"id": demo_id("customer", 0)},
             "lines": [{"product": {"id": demo_id("product", 0)}, "quantity": 1}] * 5}
    before = _count(c, auth, "OrderLine")
    _assert_too_many(c.post("/rest/entities/Order", json=order, headers=auth), 5)
    assert _count(c, auth, "OrderLine") == before
    order["lines"] = order["lines"][:4]
    assert c.post("/rest/entities/Order", json=order, headers=auth).status_code == 201


def test_bulk_update_and_delete_are_bounded_too(small):
    c, auth = small
    ids = [demo_id("product", i) for i in range(6)]
    _assert_too_many(c.put("/rest/entities/Product", json=[{"id": i, "name": "x"} for i in ids],
                           headers=auth), 5)
    _assert_too_many(c.delete("/rest/entities/Product", json=ids, headers=auth), 5)
    assert c.put("/rest/entities/Product", json=[{"id": i, "name": "x"} for i in ids[:5]],
                 headers=auth).status_code == 200


@pytest.mark.skipif(bool(PG_URL), reason="SQLite's write lock; PostgreSQL has row locks")
def test_a_write_lock_not_had_within_the_busy_timeout_is_a_503(app, client, auth):
    path = app.database.database
    app.database.connect(reuse_if_open=True)
    app.database.execute_sql("PRAGMA busy_timeout = 200")    # this thread's connection
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        response = client.post("/rest/entities/Customer", json={"name": "waits"}, headers=auth)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "2"
        assert response.json == {"error": "Service unavailable", "details":
                                 "The database is busy or cannot be reached; try again later"}
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert client.post("/rest/entities/Customer", json={"name": "waits"},
                       headers=auth).status_code == 201
