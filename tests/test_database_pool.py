"""PostgreSQL's pool (pgpool.py): a thread keeps its connection from request to
request, ``svc.datasource.pool-size`` still bounds the connections open at
once, a connection kept idle is checked before it serves again, and a load by
id is prepared once per connection."""
import json
import time
from concurrent.futures import ThreadPoolExecutor

import peewee
import pytest
from werkzeug.test import Client

from conftest import PG_URL, demo_id, get_token
from restsvc import db
from restsvc.security import gate

pytestmark = pytest.mark.skipif(not PG_URL, reason="the pool is PostgreSQL's "
                                                   "(RESTSVC_TEST_DATABASE_URL names none)")
PAGE = "/rest/entities/Customer?limit=2"


def _serve(app, auth):
    """One request, then (as a statement of the next) the backend that served it."""
    assert Client(app).get(PAGE, headers=auth).status_code == 200
    try:
        return app.database.execute_sql("SELECT pg_backend_pid()").fetchone()[0]
    finally:
        db.release(app.database)


def _in_thread(function, *args):
    """``function`` on a new thread of its own."""
    with ThreadPoolExecutor(max_workers=1) as one:
        return one.submit(function, *args).result(timeout=30)


def test_a_thread_keeps_its_connection_from_request_to_request(make_app):
    app = make_app()
    auth = {"Authorization": f"Bearer {get_token(Client(app))}"}
    backends = {_serve(app, auth) for _ in range(4)}
    assert len(backends) == 1
    assert app.database.counts() == (0, 1)      # none serving a request, one kept


def test_a_full_pool_lends_a_kept_connection_to_another_thread(make_app):
    """With one connection allowed, threads take turns with it: none waits for
    the pool's timeout or answers 503, and no second connection is opened."""
    app = make_app({"svc.datasource.pool-size": 1})
    auth = {"Authorization": f"Bearer {get_token(Client(app))}"}
    started = time.monotonic()
    backends = [_serve(app, auth), _in_thread(_serve, app, auth), _in_thread(_serve, app, auth),
                _serve(app, auth)]
    assert time.monotonic() - started < 5       # the pool's wait is 10 s
    assert len(set(backends)) == 1
    assert app.database.counts() == (0, 1)


def test_a_kept_connection_whose_server_side_ended_is_replaced(make_app):
    """A connection kept idle for longer than ``PING_AFTER`` is pinged before it
    serves: one whose backend ended meanwhile (a server restart, an idle
    timeout) is dropped, and the request is answered on a new one."""
    app = make_app()
    auth = {"Authorization": f"Bearer {get_token(Client(app))}"}
    ended = _serve(app, auth)
    import psycopg2
    with psycopg2.connect(PG_URL) as other, other.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", (ended,))
        assert cursor.fetchone()[0]
    other.close()
    time.sleep(app.database.PING_AFTER + 0.1)
    assert _serve(app, auth) != ended
    assert app.database.counts() == (0, 1)


def _prepared(app):
    """The statements prepared on this thread's connection."""
    try:
        return [row[0] for row in app.database.execute_sql(
            "SELECT statement FROM pg_prepared_statements ORDER BY prepare_time").fetchall()]
    finally:
        db.release(app.database)


def _customer(client, auth, number, plan="_base"):
    response = client.get(f"/rest/entities/Customer/{demo_id('customer', number)}",
                          query_string={"fetchPlan": plan}, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.json["id"] == demo_id("customer", number)
    return response


def test_a_load_by_id_is_prepared_once_per_connection(make_app):
    """A get by id of one plan runs, from its second time on, one statement
    prepared on the connection (PostgreSQL plans it once): the same answers,
    the ETag included. A filter's statement is not prepared."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    first = [_customer(client, auth, number) for number in (1, 2, 1)]
    assert first[0].get_data() == first[2].get_data()
    assert first[0].headers["ETag"] == first[2].headers["ETag"]
    assert first[0].get_data() != first[1].get_data()
    assert client.get(f"/rest/entities/Customer/{demo_id('customer', 1)}", headers={
        **auth, "If-None-Match": first[0].headers["ETag"]}).status_code == 304
    prepared = _prepared(app)
    assert len(prepared) == 1 and '"customer"' in prepared[0] and "$1" in prepared[0]
    search = "/rest/entities/Customer?limit=2&filter=" + json.dumps(
        {"conditions": [{"property": "name", "operator": "contains", "value": "a"}]})
    assert client.get(search, headers=auth).status_code == 200
    assert client.get(search, headers=auth).status_code == 200
    assert _prepared(app) == prepared


def test_the_rows_under_a_page_are_read_by_their_keys_in_one_prepared_statement(make_app):
    """The rows under a nested page (its references and compositions) are
    read by their keys as one array parameter: one statement per table
    whatever the number of keys, prepared at its second use, with the same
    answers as before it was."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    pages = [client.get("/rest/entities/Order", headers=auth, query_string={
        "limit": limit, "fetchPlan": "order-with-details"}) for limit in (5, 3, 5)]
    assert [page.status_code for page in pages] == [200, 200, 200]
    assert pages[0].get_data() == pages[2].get_data()
    assert pages[1].json == pages[0].json[:3]
    assert all(order["lines"] and order["customer"]["name"] for order in pages[0].json)
    assert all(line["product"]["name"] for order in pages[0].json for line in order["lines"])
    prepared = _prepared(app)
    keyed = sorted(next(table for table in ("order_line", "customer", "product")
                        if f'FROM "{table}"' in sql) for sql in prepared if "ANY" in sql)
    assert keyed == ["customer", "order_line", "product"]
    assert not any('FROM "order"' in sql for sql in prepared)     # the page itself: not keyed


def test_a_lone_write_is_prepared_once_per_connection(make_app):
    """A create's INSERTs (the row, its history item, its event) and an
    update's statement (with its history item's INSERT) are prepared at their
    second use, and write what they wrote before."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    created = []
    for number in range(3):
        response = client.post("/rest/entities/Customer", json={
            "name": f"prepared {number}", "email": f"p{number}@example.com"}, headers=auth)
        assert response.status_code == 201, response.get_data(as_text=True)
        created.append(response.json["id"])
    line = f"/rest/entities/OrderLine/{demo_id('line', '0-0')}"    # history, no events
    version = client.get(line, headers=auth).json["version"]
    for quantity in (7, 8, 9):
        response = client.put(line, json={"quantity": quantity}, headers=auth)
        assert response.status_code == 200, response.get_data(as_text=True)
    prepared = " | ".join(_prepared(app))
    for statement in ('INSERT INTO "customer"', 'INSERT INTO "history_item"',
                      'INSERT INTO "restsvc_event"', 'UPDATE "order_line"'):
        assert statement in prepared
    for number, key in enumerate(created):
        body = client.get(f"/rest/entities/Customer/{key}", headers=auth).json
        assert (body["name"], body["version"]) == (f"prepared {number}", 1)
    body = client.get(line, headers=auth).json
    assert (body["quantity"], body["version"]) == (9, version + 3)


def test_a_create_reads_its_answer_in_the_message_that_writes_it(make_app, monkeypatch):
    """A lone create along a plan sends its statements (the row, its history
    item, its event) and the read of its answer as one message: one round
    trip, answering what a get along the same plan answers, ETag included."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    sent = []
    run = app.database.execute_sql

    def spy(sql, *args, **kwargs):
        sent.append(sql)
        return run(sql, *args, **kwargs)

    monkeypatch.setattr(app.database, "execute_sql", spy)
    monkeypatch.setattr(gate, "RECHECK_SECONDS", 60)    # the token read once, by the first
    for number in range(4):     # the first makes the caller's memos; the second prepares
        sent.clear()
        response = client.post("/rest/entities/Customer", query_string={"responseFetchPlan": "_base"},
                               json={"name": f"answered {number}", "grade": "GOLD"}, headers=auth)
        assert response.status_code == 201, response.get_data(as_text=True)
        if number:
            assert len(sent) == 1, sent
        assert response.json["name"] == f"answered {number}" and response.json["version"] == 1
        got = client.get(response.headers["Location"], query_string={"fetchPlan": "_base"},
                         headers=auth)
        assert got.get_data() == response.get_data()
        assert got.headers["ETag"] == response.headers["ETag"]


def test_prepared_statements_are_bounded_per_connection(make_app):
    """Past ``PREPARED_MAX`` statements (inline plans can make new ones
    without end) a connection drops them all and prepares anew."""
    app = make_app()
    app.database.PREPARED_MAX = 2
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    plans = ["_base", "_local", "_instance_name", json.dumps({"entity": "Customer",
                                                            "properties": ["name"]})]
    for number, plan in enumerate(plans * 2, start=1):
        _customer(client, auth, number, plan)
        _customer(client, auth, number + 1, plan)
        assert 1 <= len(_prepared(app)) <= 2


def test_a_statement_prepared_in_a_failed_transaction_stays_prepared(make_app):
    """PostgreSQL keeps a statement prepared in a transaction that rolls back:
    the connection's next get by id finds it there."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    _customer(client, auth, 1)
    sql = next(iter(app.database.connection().seen))        # run once: not prepared yet
    with pytest.raises(RuntimeError), app.database.atomic():
        db.read_rows(app.database, sql, [demo_id("customer", 2)], keyed=True).fetchone()
        raise RuntimeError("the transaction fails")
    db.release(app.database)
    assert len(_prepared(app)) == 1
    _customer(client, auth, 3)
    assert len(_prepared(app)) == 1


def test_a_column_whose_type_changed_under_a_prepared_read_is_read_again(make_app):
    """A migration that changes a column's type beside a running instance
    (here by hand) invalidates the prepared load by id's result: the get is
    answered all the same, and prepared anew."""
    app = make_app()
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    before = [_customer(client, auth, 1).get_data() for _ in range(2)]
    assert len(_prepared(app)) == 1
    import psycopg2
    other = psycopg2.connect(app.settings.database_url)
    other.autocommit = True
    try:
        other.cursor().execute('ALTER TABLE customer ALTER COLUMN email TYPE varchar(300)')
        assert _customer(client, auth, 1).get_data() == before[0]
        assert _prepared(app) == []
        assert [_customer(client, auth, 1).get_data() for _ in range(2)] == before
        assert len(_prepared(app)) == 1
        # In a transaction the read cannot run again: the request answers 503.
        sql = next(iter(app.database.connection().prepared))
        other.cursor().execute('ALTER TABLE customer ALTER COLUMN email TYPE varchar(400)')
        with pytest.raises(peewee.NotSupportedError) as failed, app.database.atomic():
            db.read_rows(app.database, sql, [demo_id("customer", 1)], keyed=True)
        assert db.is_unavailable(failed.value, app.database)
        db.release(app.database)
        assert [_customer(client, auth, 1).get_data() for _ in range(3)] == before + before[:1]
    finally:
        other.cursor().execute('ALTER TABLE customer ALTER COLUMN email TYPE varchar(200)')
        other.close()
    assert _customer(client, auth, 1).get_data() == before[0]
