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

So the answers are restsvc's, headers included (``run.py`` checks both before
it measures). No roles, no metadata, no fetch plans, no row rules, no
metrics: that is the cost restsvc is measured against.
"""
import base64
import datetime
import hashlib
import hmac
import itertools
import json
import os
import re
import secrets
import sqlite3
import threading
import time
import urllib.parse
import uuid
from json.encoder import encode_basestring as _esc

CUSTOMER = ("id", "version", "name", "email", "grade", "birthDate", "photo", "createdDate",
            "userId", "createdBy", "lastModifiedBy", "lastModifiedDate", "deletedDate",
            "deletedBy")
ADDRESS = ("street", "city", "postcode")      # the embedded Address's _base, last in _base
ORDER = ("id", "version", "number", "date", "status", "amount", "createdBy", "createdDate",
         "lastModifiedBy", "lastModifiedDate", "deletedDate", "deletedBy")
LINE = ("id", "version", "quantity", "price", "createdBy", "createdDate", "lastModifiedBy",
        "lastModifiedDate", "deletedDate", "deletedBy")
PRODUCT = ("id", "version", "name", "description", "sku", "price", "deletedDate", "deletedBy")
# Values kept as their JSON text (numbers); every other non-null value is a JSON string.
NUMBERS = {"version", "quantity", "price", "amount"}

SELECT = (f"SELECT {', '.join(CUSTOMER)}, {', '.join(f'address_{part}' for part in ADDRESS)} "
          "FROM customer")
LIVE = "deletedDate IS NULL"
LIST = f"{SELECT} WHERE {LIVE} ORDER BY id LIMIT ? OFFSET ?"      # a page and one row more
LOAD = f"{SELECT} WHERE id = ? AND {LIVE}"
SEARCH = (f"{SELECT} WHERE unicode_lower(name) >= ? AND unicode_lower(name) < ? AND {LIVE} "
          "ORDER BY id LIMIT ?")
TOKEN_SELECT = "SELECT kind, expires_at, coalesce(username, client_id) FROM restsvc_token WHERE token_hash = ?"
INSERT = ("INSERT INTO customer (id, version, name, email, grade, birthDate, createdDate, "
          "createdBy, lastModifiedBy, lastModifiedDate) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?)")
INSERT_HISTORY = ("INSERT INTO history_item (id, version, entityName, entityId, kind, username, "
                  "changedDate, changes) VALUES (?, 1, 'Customer', ?, 'CREATE', ?, ?, ?)")
INSERT_EVENT = ("INSERT INTO restsvc_event (entity, entityId, kind, changed, version, username, "
                "time) VALUES ('Customer', ?, 'CREATE', ?, 1, ?, ?)")
PREFIX = "/rest/entities/Customer"
ORDERS = "/rest/entities/Order"
GRADES = ("BRONZE", "SILVER", "GOLD")
JSON_TYPE = "application/json;charset=UTF-8"
RECHECK_SECONDS = 0.5       # restsvc's gate.RECHECK_SECONDS

_local = threading.local()
_checked = {}               # token hash -> (read at, expires at, username)
_REQUEST_IDS = (secrets.token_hex(6), itertools.count(1))     # gunicorn imports this per worker
_WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")
_UNFILTERED = hashlib.blake2b(b"null", digest_size=12).hexdigest()


def connection():
    """One connection per worker thread, opened after gunicorn forks; restsvc's pragmas
    (with its default durability: the WAL synced at every commit)."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(os.environ["BASELINE_DATABASE"], isolation_level=None)
        for pragma in ("journal_mode=wal", "busy_timeout=5000", "foreign_keys=1",
                       "synchronous=full"):
            conn.execute(f"PRAGMA {pragma}")
        # the index on the lower-cased name calls it: an INSERT needs it too
        conn.create_function("unicode_lower", 1, unicode_lower, deterministic=True)
        _local.conn = conn
        _local.key = secret = os.environ["BASELINE_SECRET_KEY"].encode("utf-8")
        # itsdangerous' key for restsvc's cursors (salt "restsvc.cursor", django-concat)
        _local.cursor_key = hashlib.sha1(b"restsvc.cursor" + b"signer" + secret).digest()
        _local.tag_shape, = conn.execute(
            "SELECT value FROM bench_setting WHERE name = 'tag_shape'").fetchone()
    return conn


def unicode_lower(value):
    return value.lower() if isinstance(value, str) else value


class Reply(Exception):
    def __init__(self, status, body, headers=()):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, list(headers)


def check_token(environ, conn):
    """The caller's name (a user's, or the client id), or Reply 401."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if token and len(token) <= 512:
        token_hash = hmac.new(_local.key, token.encode("utf-8"), hashlib.sha256).hexdigest()
        now, wall = time.monotonic(), time.time()
        seen = _checked.get(token_hash)
        if seen is not None and seen[0] > now - RECHECK_SECONDS and seen[1] > wall:
            return seen[2]
        row = conn.execute(TOKEN_SELECT, (token_hash,)).fetchone()
        if row is not None and row[0] == "access" and row[1] > wall:
            _checked[token_hash] = (now, row[1], row[2])
            return row[2]
        _checked.pop(token_hash, None)
    raise Reply("401 Unauthorized",
                '{"error":"invalid_token","error_description":"Invalid or expired token"}',
                [("WWW-Authenticate", 'Bearer realm="restsvc", error="invalid_token"')])


def _prefixes(names):
    return tuple(f',"{name}":' for name in names)


def _writer(entity, names):
    """(row (values in ``names`` order), instance name, JSON text after the values) -> JSON
    text of the object, nulls left out."""
    prefixes, head = _prefixes(names), f'{{"_entityName":"{entity}"'
    numbers = tuple(name in NUMBERS for name in names)

    def write(row, name, *tail):
        parts = [head]
        if name is not None:
            parts += (',"_instanceName":', _esc(name))
        for prefix, number, value in zip(prefixes, numbers, row):
            if value is not None:
                parts += (prefix, str(value) if number else _esc(value))
        parts += tail
        parts.append("}")
        return "".join(parts)
    return write


_customer = _writer("Customer", CUSTOMER)
_ADDRESS = _prefixes(ADDRESS)
_CUSTOMER_SIZE = len(CUSTOMER)


def customer_json(row):
    address = [f"{prefix}{_esc(value)}" for prefix, value in zip(_ADDRESS, row[_CUSTOMER_SIZE:])
               if value is not None]
    if address:
        return _customer(row, row[2], ',"address":{', "".join(address)[1:], "}")
    return _customer(row, row[2])


def customers_json(rows):
    return "[" + ",".join(map(customer_json, rows)) + "]"


def query_int(environ, name, default):
    for part in environ.get("QUERY_STRING", "").split("&"):
        key, _, value = part.partition("=")
        if key == name:
            if not value.isdigit():
                raise Reply("400 Bad Request", json.dumps(
                    {"error": "Invalid parameter value",
                     "details": f"Invalid value of parameter {name}"}))
            return int(value)
    return default


def query_text(environ, name):
    for part in environ.get("QUERY_STRING", "").split("&"):
        key, _, value = part.partition("=")
        if key == name:
            return urllib.parse.unquote_plus(value)
    return None


def page(environ, rows, limit, filter_spec=None):
    """The answer of a page read with one row more than ``limit``: the rows,
    and a link to the next page when that row is there."""
    if len(rows) <= limit:
        return "200 OK", customers_json(rows), []
    del rows[limit:]
    binding = "Customer::" + (_UNFILTERED if filter_spec is None else hashlib.blake2b(
        json.dumps(filter_spec, sort_keys=True, separators=(",", ":")).encode(),
        digest_size=12).hexdigest())
    payload = base64.urlsafe_b64encode(json.dumps(
        [binding, [rows[-1][0].replace("-", "")]], separators=(",", ":")).encode()).rstrip(b"=")
    signature = base64.urlsafe_b64encode(
        hmac.digest(_local.cursor_key, payload, "sha1")).rstrip(b"=")
    query = [(name, value) for name, value in urllib.parse.parse_qsl(
        environ.get("QUERY_STRING", ""), keep_blank_values=True) if name not in ("after", "offset")]
    query.append(("after", f"{payload.decode()}.{signature.decode()}"))
    link = f'<{environ.get("PATH_INFO", "")}?{urllib.parse.urlencode(query)}>; rel="next"'
    return "200 OK", customers_json(rows), [("Link", link)]


def list_customers(environ, conn):
    limit, offset = query_int(environ, "limit", 10000), query_int(environ, "offset", 0)
    return page(environ, conn.execute(LIST, (limit + 1, offset)).fetchall(), limit)


def search_customers(environ, conn):
    """Only ``{"conditions": [{"property": "name", "operator": "startsWith", "value": ...}]}``."""
    try:
        spec = json.loads(query_text(environ, "filter"))
        condition, = spec["conditions"]
        if (condition["property"], condition["operator"]) != ("name", "startsWith"):
            raise ValueError
        prefix = condition["value"].lower()
    except (TypeError, ValueError, KeyError, AttributeError):
        raise Reply("400 Bad Request",
                    '{"error":"Cannot parse entities filter","details":""}') from None
    limit = query_int(environ, "limit", 10000)
    following = prefix[:-1] + chr(ord(prefix[-1]) + 1)      # a plain prefix only
    return page(environ, conn.execute(SEARCH, (prefix, following, limit + 1)).fetchall(), limit,
                spec)


_order = _writer("Order", ORDER)
_line = _writer("OrderLine", LINE)
_product = _writer("Product", PRODUCT)
ORDER_SELECT = (f'SELECT {", ".join(ORDER)}, customer_id FROM "order" WHERE {LIVE} '
                "ORDER BY id LIMIT ?")
IN_JSON = "IN (SELECT value FROM json_each(?))"      # one statement text whatever the count
CUSTOMERS_IN = f"{SELECT} WHERE id {IN_JSON} AND {LIVE} ORDER BY id"
LINES_IN = (f"SELECT {', '.join(LINE)}, product_id, order_id FROM order_line "
            f"WHERE order_id {IN_JSON} AND {LIVE} ORDER BY id")
PRODUCTS_IN = f"SELECT {', '.join(PRODUCT)} FROM product WHERE id {IN_JSON} ORDER BY id"


def list_orders(environ, conn):
    """The ``order-with-details`` plan, as JSON text."""
    if query_text(environ, "fetchPlan") != "order-with-details":
        raise Reply("400 Bad Request", '{"error":"Unsupported fetch plan","details":""}')
    orders = conn.execute(ORDER_SELECT, (query_int(environ, "limit", 10000),)).fetchall()
    size = len(ORDER)
    customers = {row[0]: customer_json(row) for row in conn.execute(
        CUSTOMERS_IN, (json.dumps(list({row[size] for row in orders})),))}
    lines = conn.execute(LINES_IN, (json.dumps([row[0] for row in orders]),)).fetchall()
    size = len(LINE)
    products = {row[0]: (row[2], _product(row, row[2])) for row in conn.execute(
        PRODUCTS_IN, (json.dumps(list({row[size] for row in lines})),))}
    lines_of = {}
    for line in lines:
        name, product = products[line[size]]
        text = _line(line, name, ',"product":', product)   # named by its product
        lines_of.setdefault(line[size + 1], []).append((line[2], text))
    out = []
    for row in orders:
        mine = lines_of.get(row[0], ())
        customer = customers.get(row[-1])
        out.append(_order(row, row[2], f',"itemCount":{sum(quantity for quantity, _ in mine)}',
                          *((',"customer":', customer) if customer else ()),
                          ',"lines":[', ",".join(text for _, text in mine), "]"))
    return "200 OK", "[" + ",".join(out) + "]", []


def load_customer(environ, conn, raw_id):
    try:
        key = str(uuid.UUID(raw_id))
    except ValueError:
        key = None
    row = key and conn.execute(LOAD, (key,)).fetchone()
    if not row:
        raise Reply("404 Not Found", json.dumps(
            {"error": "Entity not found",
             "details": f"Entity Customer with id {raw_id} not found"}))
    return "200 OK", customer_json(row), [("ETag", _etag(key, row[1]))]


def _etag(key, version):
    """restsvc's ETag of the customer ``key`` at ``version`` read along ``_base``."""
    tag = hashlib.blake2b(f"{key}{_local.tag_shape}".encode("utf-8"), digest_size=9).hexdigest()
    return f'"{version}-{tag}"'


def _now_text():
    """restsvc's date-time form: ``2024-01-01T09:00:00.5`` (no trailing zeros)."""
    text = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None).isoformat()
    return text.rstrip("0").rstrip(".") if "." in text else text


def create_customer(environ, conn, user):
    """``responseFetchPlan=_base``: the full entity."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length).decode("utf-8"))
        name, email, grade = body["name"], body.get("email"), body.get("grade")
        birth_date = body.get("birthDate")
        if not isinstance(name, str) or not isinstance(email, (str, type(None))) \
                or grade not in (None, *GRADES):
            raise ValueError
        if birth_date is not None:
            birth_date = datetime.date.fromisoformat(birth_date).isoformat()
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Reply("400 Bad Request",
                    '{"error":"Cannot deserialize an entity from JSON","details":""}') from None
    new_id = str(uuid.uuid4())
    now = _now_text()
    row = (new_id, 1, name, email, grade, birth_date, None, now, None, user, user, now)
    given = [(key, value) for key, value in (("name", name), ("email", email), ("grade", grade),
                                             ("birthDate", birth_date)) if value is not None]
    changes = json.dumps([{"name": key, "oldValue": None, "newValue": value} for key, value in given],
                         ensure_ascii=False, separators=(",", ":"))
    conn.execute("BEGIN IMMEDIATE")     # the write lock first, as restsvc takes it (else SQLITE_BUSY)
    try:
        conn.execute(INSERT, (new_id, name, email, grade, birth_date, now, user, user, now))
        conn.execute(INSERT_HISTORY, (uuid.uuid4().hex, new_id, user, now, changes))
        conn.execute(INSERT_EVENT, (new_id, json.dumps([key for key, _ in given]), user, now))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return "201 Created", _customer(row, name), [("Location", f"{PREFIX}/{new_id}"),
                                                 ("ETag", _etag(new_id, 1))]


def route(environ, conn, user):
    path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
    if path.rstrip("/") == PREFIX:
        if method == "GET":
            return list_customers(environ, conn)
        if method == "POST":
            return create_customer(environ, conn, user)
    elif path == PREFIX + "/search":
        if method == "GET":
            return search_customers(environ, conn)
    elif path == ORDERS:
        if method == "GET":
            return list_orders(environ, conn)
    elif path.startswith(PREFIX + "/") and "/" not in path[len(PREFIX) + 1:]:
        if method == "GET":
            return load_customer(environ, conn, path[len(PREFIX) + 1:])
    else:
        raise Reply("404 Not Found", json.dumps({"error": "Not found", "details": path}))
    raise Reply("405 Method Not Allowed", json.dumps(
        {"error": "Method not allowed", "details": f"{method} is not supported here"}))


def request_id(environ):
    given = environ.get("HTTP_X_REQUEST_ID")
    if given and _WELL_FORMED_ID.match(given):
        return given
    prefix, counter = _REQUEST_IDS
    return f"{prefix}-{next(counter)}"


def app(environ, start_response):
    answer_id = request_id(environ)
    conn = connection()
    try:
        status, body, headers = route(environ, conn, check_token(environ, conn))
    except Reply as reply:
        status, body, headers = reply.status, reply.body, reply.headers
    payload = body.encode("utf-8")
    start_response(status, [*headers, ("Content-Type", JSON_TYPE),
                            ("Content-Length", str(len(payload))), ("X-Request-Id", answer_id)])
    return [payload]
