"""The benchmark's bare baseline: restsvc's measured operations with only the stdlib.

    BASELINE_DATABASE=/path/restsvc.db BASELINE_SECRET_KEY=... gunicorn -w 2 baseline:app

It reads and writes the tables restsvc creates (ids as 32-digit hex, enums by
id, dates as ISO text, decimals as numbers written with the column's scale)
and checks the bearer token the way restsvc's token store does: HMAC-SHA256 of
the token with the secret key, one primary-key read of ``restsvc_token``, kind
and expiry. It answers with the same bytes as restsvc: the customer list, load
and create, the ``order-with-details`` list of orders (customer, lines and
their products: one query per level) and a ``startsWith`` search on the
customer name (the same index range restsvc uses). No roles, no metadata, no
fetch plans: that is the cost restsvc is measured against.
"""
import datetime
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
import urllib.parse
import uuid

GRADE_BY_ID = {"B": "BRONZE", "S": "SILVER", "G": "GOLD"}
GRADE_ID = {name: grade_id for grade_id, name in GRADE_BY_ID.items()}
COLUMNS = ("id", "version", "name", "email", "grade", "birthDate", "photo", "createdDate")
ADDRESS = ("street", "city", "postcode")      # the embedded Address's _base, last in _base
SELECT = (f"SELECT {', '.join(COLUMNS)}, {', '.join(f'address_{part}' for part in ADDRESS)} "
          "FROM customer")
TOKEN_SELECT = ("SELECT token_hash, kind, client_id, username, resource_roles, row_level_roles, "
                "issued_at, expires_at FROM restsvc_token WHERE token_hash = ?")
PREFIX = "/rest/entities/Customer"
ORDERS = "/rest/entities/Order"
STATUS_BY_ID = {"10": "NEW", "20": "PAID", "30": "SHIPPED", "40": "CANCELLED"}
JSON_TYPE = "application/json;charset=UTF-8"

_local = threading.local()


def connection():
    """One connection per worker thread, opened after gunicorn forks; restsvc's pragmas
    (with its default durability: the WAL synced at every commit)."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(os.environ["BASELINE_DATABASE"], isolation_level=None)
        for pragma in ("journal_mode=wal", "busy_timeout=5000", "foreign_keys=1",
                       "synchronous=full"):
            conn.execute(f"PRAGMA {pragma}")
        # restsvc's index on the lower-cased name calls it: an INSERT needs it too
        conn.create_function("unicode_lower", 1, unicode_lower, deterministic=True)
        _local.conn = conn
    return conn


def unicode_lower(value):
    return value.lower() if isinstance(value, str) else value


class RawJson(str):
    """A body that already is JSON text."""


class Reply(Exception):
    def __init__(self, status, body, headers=()):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, list(headers)


def check_token(environ):
    header = environ.get("HTTP_AUTHORIZATION", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    row = None
    if token and len(token) <= 512:
        key = os.environ["BASELINE_SECRET_KEY"].encode("utf-8")
        token_hash = hmac.new(key, token.encode("utf-8"), hashlib.sha256).hexdigest()
        row = connection().execute(TOKEN_SELECT, (token_hash,)).fetchone()
    if row is None or row[1] != "access" or row[7] <= time.time():
        raise Reply("401 Unauthorized",
                    {"error": "invalid_token", "error_description": "Invalid or expired token"},
                    [("WWW-Authenticate", 'Bearer realm="restsvc", error="invalid_token"')])


def format_datetime(text):
    """Stored ``2024-01-01 09:00:00.500000`` -> ``2024-01-01T09:00:00.5`` (restsvc's form)."""
    date_time, _, fraction = text.replace(" ", "T", 1).partition(".")
    fraction = fraction.rstrip("0")
    return f"{date_time}.{fraction}" if fraction else date_time


def to_json(row):
    values = dict(zip(COLUMNS, row))
    out = {"_entityName": "Customer", "_instanceName": values["name"],
           "id": str(uuid.UUID(values["id"]))}
    for column in COLUMNS[1:]:
        value = values[column]
        if value is None:
            continue
        if column == "grade":
            value = GRADE_BY_ID.get(value)
        elif column == "createdDate":
            value = format_datetime(value)
        out[column] = value
    address = {part: value for part, value in zip(ADDRESS, row[len(COLUMNS):]) if value is not None}
    if address:
        out["address"] = address
    if out["_instanceName"] is None:
        del out["_instanceName"]
    return out


def query_int(environ, name, default):
    for part in environ.get("QUERY_STRING", "").split("&"):
        key, _, value = part.partition("=")
        if key == name:
            if not value.isdigit():
                raise Reply("400 Bad Request", {"error": "Invalid parameter value",
                                                "details": f"Invalid value of parameter {name}"})
            return int(value)
    return default


def query_text(environ, name):
    for part in environ.get("QUERY_STRING", "").split("&"):
        key, _, value = part.partition("=")
        if key == name:
            return urllib.parse.unquote_plus(value)
    return None


def list_customers(environ):
    limit, offset = query_int(environ, "limit", 10000), query_int(environ, "offset", 0)
    rows = connection().execute(f"{SELECT} ORDER BY id LIMIT ? OFFSET ?",
                                (limit, offset)).fetchall()
    return "200 OK", [to_json(row) for row in rows], []


def search_customers(environ):
    """Only ``{"conditions": [{"property": "name", "operator": "startsWith", "value": ...}]}``."""
    try:
        condition, = json.loads(query_text(environ, "filter"))["conditions"]
        if (condition["property"], condition["operator"]) != ("name", "startsWith"):
            raise ValueError
        prefix = condition["value"].lower()
    except (TypeError, ValueError, KeyError, AttributeError):
        raise Reply("400 Bad Request", {"error": "Cannot parse entities filter",
                                        "details": ""}) from None
    limit = query_int(environ, "limit", 10000)
    following = prefix[:-1] + chr(ord(prefix[-1]) + 1)      # a plain prefix only
    rows = connection().execute(
        f"{SELECT} WHERE unicode_lower(name) >= ? AND unicode_lower(name) < ? "
        "ORDER BY id LIMIT ?", (prefix, following, limit)).fetchall()
    return "200 OK", [to_json(row) for row in rows], []


def _hex_in(ids):
    return ", ".join("?" for _ in ids), sorted(ids)


def _money(value):
    return None if value is None else f"{value:.2f}"


def _object(pairs):
    """JSON text of (key, JSON text) pairs, nulls left out: decimals keep their scale."""
    return "{" + ",".join(f'"{key}":{text}' for key, text in pairs if text is not None) + "}"


def _text(value):
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _product(row):
    product_id, version, name, sku, price = row
    return _object((("_entityName", '"Product"'), ("_instanceName", _text(name)),
                    ("id", f'"{uuid.UUID(product_id)}"'), ("version", str(version)),
                    ("name", _text(name)), ("sku", _text(sku)), ("price", _money(price))))


def list_orders(environ):
    """The ``order-with-details`` plan, as JSON text."""
    if query_text(environ, "fetchPlan") != "order-with-details":
        raise Reply("400 Bad Request", {"error": "Unsupported fetch plan", "details": ""})
    conn = connection()
    orders = conn.execute('SELECT id, version, number, date, status, amount, customer_id '
                          'FROM "order" ORDER BY id LIMIT ?',
                          (query_int(environ, "limit", 10000),)).fetchall()
    marks, keys = _hex_in({row[6] for row in orders})
    customers = {row[0]: json.dumps(to_json(row), ensure_ascii=False, separators=(",", ":"))
                 for row in conn.execute(f"{SELECT} WHERE id IN ({marks}) ORDER BY id", keys)}
    marks, keys = _hex_in({row[0] for row in orders})
    lines = conn.execute("SELECT id, version, quantity, price, product_id, order_id FROM "
                         f"order_line WHERE order_id IN ({marks}) ORDER BY id", keys).fetchall()
    marks, keys = _hex_in({row[4] for row in lines})
    products = {row[0]: (row[2], _product(row)) for row in conn.execute(
        f"SELECT id, version, name, sku, price FROM product WHERE id IN ({marks}) ORDER BY id",
        keys)}
    lines_of = {}
    for line_id, version, quantity, price, product_id, order_id in lines:
        name, product = products[product_id]
        lines_of.setdefault(order_id, []).append((quantity, _object((
            ("_entityName", '"OrderLine"'), ("_instanceName", _text(name)),
            ("id", f'"{uuid.UUID(line_id)}"'), ("version", str(version)),
            ("quantity", str(quantity)), ("price", _money(price)), ("product", product)))))
    out = []
    for order_id, version, number, date, status, amount, customer_id in orders:
        mine = lines_of.get(order_id, [])
        out.append(_object((
            ("_entityName", '"Order"'), ("_instanceName", _text(number)),
            ("id", f'"{uuid.UUID(order_id)}"'), ("version", str(version)),
            ("number", _text(number)), ("date", _text(date)),
            ("status", _text(STATUS_BY_ID.get(status))), ("amount", _money(amount)),
            ("itemCount", str(sum(quantity for quantity, _ in mine))),
            ("customer", customers.get(customer_id)),
            ("lines", "[" + ",".join(text for _, text in mine) + "]"))))
    return "200 OK", RawJson("[" + ",".join(out) + "]"), []


def load_customer(environ, raw_id):
    try:
        key = uuid.UUID(raw_id).hex
    except ValueError:
        key = None
    row = key and connection().execute(f"{SELECT} WHERE id = ?", (key,)).fetchone()
    if not row:
        raise Reply("404 Not Found", {"error": "Entity not found",
                                      "details": f"Entity Customer with id {raw_id} not found"})
    return "200 OK", to_json(row), []


def create_customer(environ):
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length).decode("utf-8"))
        name = body["name"]
        grade = GRADE_ID[body["grade"]] if body.get("grade") is not None else None
        email, birth_date = body.get("email"), body.get("birthDate")
        if not isinstance(name, str) or not isinstance(email, (str, type(None))):
            raise ValueError
        if birth_date is not None:
            birth_date = datetime.date.fromisoformat(birth_date).isoformat()
    except (ValueError, KeyError, TypeError, AttributeError):
        raise Reply("400 Bad Request", {"error": "Cannot deserialize an entity from JSON",
                                        "details": ""}) from None
    new_id = uuid.uuid4()
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    connection().execute(
        "INSERT INTO customer (id, version, name, email, grade, birthDate, createdDate) "
        "VALUES (?, 1, ?, ?, ?, ?, ?)",
        (new_id.hex, name, email, grade, birth_date, str(now)))
    url = f"{environ['wsgi.url_scheme']}://{environ.get('HTTP_HOST', 'localhost')}{PREFIX}"
    return ("201 Created", {"_entityName": "Customer", "_instanceName": name, "id": str(new_id)},
            [("Location", f"{url}/{new_id}")])


def route(environ):
    path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
    if path.rstrip("/") == PREFIX:
        handlers = {"GET": list_customers, "POST": create_customer}
        if method in handlers:
            return handlers[method](environ)
    elif path == PREFIX + "/search":
        if method == "GET":
            return search_customers(environ)
    elif path == ORDERS:
        if method == "GET":
            return list_orders(environ)
    elif path.startswith(PREFIX + "/") and "/" not in path[len(PREFIX) + 1:]:
        if method == "GET":
            return load_customer(environ, path[len(PREFIX) + 1:])
    else:
        raise Reply("404 Not Found", {"error": "Not found", "details": path})
    raise Reply("405 Method Not Allowed", {"error": "Method not allowed",
                                           "details": f"{method} is not supported here"})


def app(environ, start_response):
    try:
        check_token(environ)
        status, body, headers = route(environ)
    except Reply as reply:
        status, body, headers = reply.status, reply.body, reply.headers
    if isinstance(body, RawJson):
        payload = body.encode("utf-8")
    else:
        payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    start_response(status, [("Content-Type", JSON_TYPE), ("Content-Length", str(len(payload))),
                            *headers])
    return [payload]
