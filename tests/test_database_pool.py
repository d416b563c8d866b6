"""PostgreSQL's pool (pgpool.py): a thread keeps its connection from request to
request, ``svc.datasource.pool-size`` still bounds the connections open at
once, and a connection kept idle is checked before it serves again."""
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from werkzeug.test import Client

from conftest import PG_URL, get_token
from restsvc import db

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
