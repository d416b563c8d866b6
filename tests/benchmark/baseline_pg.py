"""The benchmark's baseline on PostgreSQL: ``baseline.py``'s operations through
``psycopg2``, nothing else (run.py starts it beside restsvc on PostgreSQL).

    BASELINE_DATABASE_URL=postgresql://...?options=-csearch_path%3D<schema> \\
        BASELINE_SECRET_KEY=... gunicorn -w 2 baseline_pg:app

Its schema is its own (``baseline_data.build_postgres`` fills it from
restsvc's once): restsvc's tables, columns, defaults and indexes (``LIKE ...
INCLUDING ALL``: the primary keys, the plain ones, ``lower(column)
text_pattern_ops`` and the ``gin_trgm_ops`` trigram ones, which a create
writes as restsvc's does), ids kept as ``uuid`` (read as their text, as
restsvc's connections read them), every other value stored as the text the
answer writes (enums by name, dates and date-times in the answer's ISO form,
decimals with the column's scale). Foreign keys are not copied (``LIKE``
does not copy them; no measured operation writes a referencing row).

Per request, as the SQLite baseline (``baseline.py``): the token's HMAC and
restsvc's 0.5 s rule for its row, and one statement per operation
(``PREPARE``\\d once per connection, so PostgreSQL plans it once; the search
is not prepared: ``lower(name) LIKE 'prefix%'`` uses the ``text_pattern_ops``
index only when the planner sees the pattern, as restsvc sends it). The
connection is in autocommit (a read is one round trip, no ``BEGIN``); a
create sends its three INSERTs (customer, history item, change event) in one
message, which PostgreSQL runs as one transaction: one round trip, one
commit. Headers: ``baseline_web``'s (ETag, Link, Location, X-Request-Id).
Connections name themselves ``restsvc-baseline`` (``application_name``), so
run.py can find their backends and count PostgreSQL's CPU for them.
"""
import os

import psycopg2
from psycopg2 import extensions

from baseline_web import (CUSTOMER_COLUMNS, LINE_COLUMNS, LIVE, ORDER_COLUMNS, PRODUCT_COLUMNS,
                          TOKEN_SELECT, keys, make_app)

APPLICATION_NAME = "restsvc-baseline"
UUID_OID = 2950
SELECT = f"SELECT {CUSTOMER_COLUMNS} FROM customer"
PREPARED = {    # name -> statement; EXECUTE name(...) per request
    "token": f"{TOKEN_SELECT}$1",
    "list": f"{SELECT} WHERE {LIVE} ORDER BY id LIMIT $1 OFFSET $2",   # a page and one row more
    "load": f"{SELECT} WHERE id = $1 AND {LIVE}",
    "orders": f'SELECT {ORDER_COLUMNS}, customer_id FROM "order" WHERE {LIVE} ORDER BY id LIMIT $1',
    "customers_in": f"{SELECT} WHERE id = ANY($1) AND {LIVE} ORDER BY id",
    "lines_in": (f"SELECT {LINE_COLUMNS}, product_id, order_id FROM order_line "
                 f"WHERE order_id = ANY($1) AND {LIVE} ORDER BY id"),
    "products_in": f"SELECT {PRODUCT_COLUMNS} FROM product WHERE id = ANY($1) ORDER BY id",
    "insert": ('INSERT INTO customer (id, version, name, email, grade, "birthDate", "createdDate", '
               '"createdBy", "lastModifiedBy", "lastModifiedDate", "tenantId") '
               "VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"),
    "insert_history": ('INSERT INTO history_item (id, version, "entityName", "entityId", kind, '
                       'username, "changedDate", changes) '
                       "VALUES ($1, 1, 'Customer', $2, 'CREATE', $3, $4, $5)"),
    "insert_event": ('INSERT INTO restsvc_event (entity, "entityId", kind, changed, version, '
                     "username, time) VALUES ('Customer', $1, 'CREATE', $2, 1, $3, $4)"),
}
SEARCH = (f"{SELECT} WHERE lower(name) LIKE %s ESCAPE '\\' AND {LIVE} ORDER BY id LIMIT %s")
CREATE = ("EXECUTE insert(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s); "
          "EXECUTE insert_history(%s, %s, %s, %s, %s); EXECUTE insert_event(%s, %s, %s, %s)")


class Session:
    """One connection per worker thread, opened after gunicorn forks."""

    def __init__(self):
        conn = self.conn = psycopg2.connect(os.environ["BASELINE_DATABASE_URL"],
                                            application_name=APPLICATION_NAME)
        conn.autocommit = True
        # uuid columns as their text, whatever another module registered for the process
        extensions.register_type(extensions.new_type((UUID_OID,), "BASELINE_UUID",
                                                     extensions.UNICODE), conn)
        cursor = self.cursor = conn.cursor()
        for name, sql in PREPARED.items():
            cursor.execute(f"PREPARE {name} AS {sql}")
        self.key, self.cursor_key = keys(os.environ["BASELINE_SECRET_KEY"])
        cursor.execute("SELECT value FROM bench_setting WHERE name = 'tag_shape'")
        self.tag_shape = bytes(cursor.fetchone()[0]).decode("utf-8")     # stored as bytea

    def _all(self, sql, params):
        self.cursor.execute(sql, params)
        return self.cursor.fetchall()

    def token(self, token_hash):
        self.cursor.execute("EXECUTE token(%s)", (token_hash,))
        return self.cursor.fetchone()

    def page(self, limit, offset):
        return self._all("EXECUTE list(%s, %s)", (limit, offset))

    def search(self, prefix, limit):
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        return self._all(SEARCH, (pattern, limit))

    def load(self, key):
        self.cursor.execute("EXECUTE load(%s)", (key,))
        return self.cursor.fetchone()

    def orders(self, limit):
        return self._all("EXECUTE orders(%s)", (limit,))

    def customers_in(self, ids):
        return self._all("EXECUTE customers_in(%s::uuid[])", (ids,))

    def lines_in(self, ids):
        return self._all("EXECUTE lines_in(%s::uuid[])", (ids,))

    def products_in(self, ids):
        return self._all("EXECUTE products_in(%s::uuid[])", (ids,))

    def create(self, customer, history, event):
        self.cursor.execute(CREATE, (*customer, *history, *event))     # one transaction


app = make_app(Session)
