"""The benchmark's honest baseline: restsvc's measured operations the fastest way
plain Python serves them (stdlib ``sqlite3`` and ``json`` only).

    BASELINE_DATABASE=/path/baseline.db BASELINE_SECRET_KEY=... gunicorn -w 2 baseline:app

Its database is its own (``build`` fills it from restsvc's once): every value
is stored in the form it is written in the answer, so a row goes to JSON
without a conversion: ids as the UUID text (``0027b4c0-69c3-...``), enums by
name (``SILVER``), dates and date-times as the ISO text of the answer
(``2024-02-01T23:31:00``), decimals as their JSON text with the column's scale
(``248.76``). The tables have the same columns as restsvc's (audit and
soft-delete columns) and restsvc's own indexes, copied from its database
(plain, lower-cased and trigram); the same durability (WAL,
``synchronous=FULL``, one fsync per commit).

Per request it does what restsvc must do for the same bytes, and no more:

- token: the bearer token's HMAC-SHA256 with the secret key on every request,
  then the same caching rule as restsvc's gate: a token read from
  ``restsvc_token`` (kind and expiry) is trusted for 0.5 s, never past its expiry;
- one statement text per operation (``sqlite3`` keeps it prepared);
- list, search: ``deletedDate IS NULL`` (Customer is soft-deletable), ordered
  by id, ``limit``/``offset``; search is a ``startsWith`` on the name through
  the index on ``unicode_lower(name)``, as restsvc's; one row more than the
  page is read, and when it is there the answer links the next page
  (``Link: <...&after=CURSOR>; rel="next"``) with restsvc's cursor: the last
  id, signed (HMAC-SHA1, itsdangerous' form, with a key derived once);
- get: one primary-key read, and its ``ETag`` (restsvc's bytes: the version and a
  BLAKE2b digest of the id and of what shapes the body for this caller, a text
  restsvc works out once per plan and caller and the harness hands over in the
  ``bench_setting`` table);
- create (``responseFetchPlan=_base``): the body parsed and checked, one
  transaction with the customer's INSERT (audit columns filled), its history
  item's INSERT (Customer has history) and its change event's INSERT
  (Customer publishes events), the full entity answered with its ETag; the same indexes
  as restsvc's are written, the trigram tables of substring search included
  (their triggers fire for the customer's name, email and city and the
  history item's entity name);
- nested: ``order-with-details``: orders, then their customers, lines and
  products, one query per level, a shared row written once.

- every answer: ``X-Request-Id`` (the caller's when well-formed, else a
  prefix and a counter, as restsvc makes it).

The WSGI app, the route, the token check, the writers, the cursor and the
ETag are ``baseline_web``'s, shared with the PostgreSQL baseline
(``baseline_pg.py``); this module holds what is SQLite's: the connection and
the statements.

So the answers are restsvc's, headers included (``run.py`` checks both before
it measures). No roles, no metadata, no fetch plans, no row rules, no
metrics: that is the cost restsvc is measured against.
"""
import json
import os
import sqlite3

from baseline_web import (CUSTOMER_COLUMNS, LINE_COLUMNS, LIVE, ORDER_COLUMNS, PRODUCT_COLUMNS,
                          TOKEN_SELECT, keys, make_app)

SELECT = f"SELECT {CUSTOMER_COLUMNS} FROM customer"
LIST = f"{SELECT} WHERE {LIVE} ORDER BY id LIMIT ? OFFSET ?"      # a page and one row more
LOAD = f"{SELECT} WHERE id = ? AND {LIVE}"
SEARCH = (f"{SELECT} WHERE unicode_lower(name) >= ? AND unicode_lower(name) < ? AND {LIVE} "
          "ORDER BY id LIMIT ?")
INSERT = ('INSERT INTO customer (id, version, name, email, grade, "birthDate", "createdDate", '
          '"createdBy", "lastModifiedBy", "lastModifiedDate", "tenantId") '
          'VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
INSERT_HISTORY = ('INSERT INTO history_item (id, version, "entityName", "entityId", kind, username, '
                  '"changedDate", changes) VALUES (?, 1, \'Customer\', ?, \'CREATE\', ?, ?, ?)')
INSERT_EVENT = ('INSERT INTO restsvc_event (entity, "entityId", kind, changed, version, username, '
                'time) VALUES (\'Customer\', ?, \'CREATE\', ?, 1, ?, ?)')
ORDER_SELECT = f'SELECT {ORDER_COLUMNS}, customer_id FROM "order" WHERE {LIVE} ORDER BY id LIMIT ?'
IN_JSON = "IN (SELECT value FROM json_each(?))"      # one statement text whatever the count
CUSTOMERS_IN = f"{SELECT} WHERE id {IN_JSON} AND {LIVE} ORDER BY id"
LINES_IN = (f"SELECT {LINE_COLUMNS}, product_id, order_id FROM order_line "
            f"WHERE order_id {IN_JSON} AND {LIVE} ORDER BY id")
PRODUCTS_IN = f"SELECT {PRODUCT_COLUMNS} FROM product WHERE id {IN_JSON} ORDER BY id"


def unicode_lower(value):
    return value.lower() if isinstance(value, str) else value


class Session:
    """One connection per worker thread, opened after gunicorn forks; restsvc's pragmas
    (with its default durability: the WAL synced at every commit)."""

    def __init__(self):
        conn = self.conn = sqlite3.connect(os.environ["BASELINE_DATABASE"], isolation_level=None)
        for pragma in ("journal_mode=wal", "busy_timeout=5000", "foreign_keys=1",
                       "synchronous=full"):
            conn.execute(f"PRAGMA {pragma}")
        # the index on the lower-cased name calls it: an INSERT needs it too
        conn.create_function("unicode_lower", 1, unicode_lower, deterministic=True)
        self.key, self.cursor_key = keys(os.environ["BASELINE_SECRET_KEY"])
        self.tag_shape, = conn.execute(
            "SELECT value FROM bench_setting WHERE name = 'tag_shape'").fetchone()

    def token(self, token_hash):
        return self.conn.execute(TOKEN_SELECT + "?", (token_hash,)).fetchone()

    def page(self, limit, offset):
        return self.conn.execute(LIST, (limit, offset)).fetchall()

    def search(self, prefix, limit):
        following = prefix[:-1] + chr(ord(prefix[-1]) + 1)      # a plain prefix only
        return self.conn.execute(SEARCH, (prefix, following, limit)).fetchall()

    def load(self, key):
        return self.conn.execute(LOAD, (key,)).fetchone()

    def orders(self, limit):
        return self.conn.execute(ORDER_SELECT, (limit,)).fetchall()

    def customers_in(self, ids):
        return self.conn.execute(CUSTOMERS_IN, (json.dumps(ids),))

    def lines_in(self, ids):
        return self.conn.execute(LINES_IN, (json.dumps(ids),)).fetchall()

    def products_in(self, ids):
        return self.conn.execute(PRODUCTS_IN, (json.dumps(ids),))

    def create(self, customer, history, event):
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")     # the write lock first, as restsvc takes it (else SQLITE_BUSY)
        try:
            conn.execute(INSERT, customer)
            conn.execute(INSERT_HISTORY, history)
            conn.execute(INSERT_EVENT, event)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


app = make_app(Session)
