"""The database-independent part of the benchmark's baselines (``baseline.py`` on
SQLite, ``baseline_pg.py`` on PostgreSQL): the WSGI app, the route, the token
check with restsvc's caching rule, the JSON writers, the signed cursor of the
next page, the ETag, the create's body check. A baseline hands ``make_app`` its
``Session`` class: one per worker thread, opened after gunicorn forks, with the
statements of each operation (``token``, ``page``, ``search``, ``load``,
``orders``, ``customers_in``, ``lines_in``, ``products_in``, ``create``), the
secret key and the ETag's fixed part (``tag_shape``).

Headers written, as restsvc writes them: ``ETag`` on a get and a create,
``Link`` (with restsvc's signed cursor) on a page that has a next one,
``Location`` on a create, ``X-Request-Id`` on every answer.
"""
import base64
import datetime
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
import urllib.parse
import uuid
from json.encoder import encode_basestring as _esc

CUSTOMER = ("id", "version", "name", "email", "grade", "birthDate", "photo", "createdDate",
            "userId", "createdBy", "lastModifiedBy", "lastModifiedDate", "deletedDate",
            "deletedBy", "tenantId")
ADDRESS = ("street", "city", "postcode")      # the embedded Address's _base, last in _base
ORDER = ("id", "version", "number", "date", "status", "amount", "createdBy", "createdDate",
         "lastModifiedBy", "lastModifiedDate", "deletedDate", "deletedBy", "tenantId")
LINE = ("id", "version", "quantity", "price", "createdBy", "createdDate", "lastModifiedBy",
        "lastModifiedDate", "deletedDate", "deletedBy", "tenantId")
PRODUCT = ("id", "version", "name", "description", "sku", "price", "deletedDate", "deletedBy")
# Values kept as their JSON text (numbers); every other non-null value is a JSON string.
NUMBERS = {"version", "quantity", "price", "amount"}
CUSTOMER_COLUMNS = (f"{', '.join(f'{chr(34)}{c}{chr(34)}' for c in CUSTOMER)}, "
                    f"{', '.join(f'address_{part}' for part in ADDRESS)}")
ORDER_COLUMNS = ", ".join(f'"{c}"' for c in ORDER)
LINE_COLUMNS = ", ".join(f'"{c}"' for c in LINE)
PRODUCT_COLUMNS = ", ".join(f'"{c}"' for c in PRODUCT)
LIVE = '"deletedDate" IS NULL'
TOKEN_SELECT = ("SELECT kind, expires_at, coalesce(username, client_id) FROM restsvc_token "
                "WHERE token_hash = ")       # and the driver's parameter
PREFIX = "/rest/entities/Customer"
ORDERS = "/rest/entities/Order"
GRADES = ("BRONZE", "SILVER", "GOLD")
JSON_TYPE = "application/json;charset=UTF-8"
RECHECK_SECONDS = 0.5       # restsvc's gate.RECHECK_SECONDS
TENANT = "north"            # a global caller's create without one: svc.tenants.default

_checked = {}               # token hash -> (read at, expires at, username)
_REQUEST_IDS = (secrets.token_hex(6), itertools.count(1))     # gunicorn imports this per worker
_WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")
_UNFILTERED = hashlib.blake2b(b"null", digest_size=12).hexdigest()


class Reply(Exception):
    def __init__(self, status, body, headers=()):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, list(headers)


def keys(secret):
    """(the token HMAC's key, itsdangerous' key for restsvc's cursors: salt
    "restsvc.cursor", django-concat), derived once per session."""
    key = secret.encode("utf-8")
    return key, hashlib.sha1(b"restsvc.cursor" + b"signer" + key).digest()


def check_token(environ, session):
    """The caller's name (a user's, or the client id), or Reply 401."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if token and len(token) <= 512:
        token_hash = hmac.new(session.key, token.encode("utf-8"), hashlib.sha256).hexdigest()
        now, wall = time.monotonic(), time.time()
        seen = _checked.get(token_hash)
        if seen is not None and seen[0] > now - RECHECK_SECONDS and seen[1] > wall:
            return seen[2]
        row = session.token(token_hash)
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
_order = _writer("Order", ORDER)
_line = _writer("OrderLine", LINE)
_product = _writer("Product", PRODUCT)
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


def page(environ, session, rows, limit, filter_spec=None):
    """The answer of a page read with one row more than ``limit``: the rows,
    and a link to the next page when that row is there."""
    rows = list(rows)
    if len(rows) <= limit:
        return "200 OK", customers_json(rows), []
    del rows[limit:]
    binding = "Customer::" + (_UNFILTERED if filter_spec is None else hashlib.blake2b(
        json.dumps(filter_spec, sort_keys=True, separators=(",", ":")).encode(),
        digest_size=12).hexdigest())
    payload = base64.urlsafe_b64encode(json.dumps(
        [binding, [rows[-1][0].replace("-", "")]], separators=(",", ":")).encode()).rstrip(b"=")
    signature = base64.urlsafe_b64encode(
        hmac.digest(session.cursor_key, payload, "sha1")).rstrip(b"=")
    query = [(name, value) for name, value in urllib.parse.parse_qsl(
        environ.get("QUERY_STRING", ""), keep_blank_values=True) if name not in ("after", "offset")]
    query.append(("after", f"{payload.decode()}.{signature.decode()}"))
    link = f'<{environ.get("PATH_INFO", "")}?{urllib.parse.urlencode(query)}>; rel="next"'
    return "200 OK", customers_json(rows), [("Link", link)]


def list_customers(environ, session):
    limit, offset = query_int(environ, "limit", 10000), query_int(environ, "offset", 0)
    return page(environ, session, session.page(limit + 1, offset), limit)


def search_customers(environ, session):
    """Only ``{"conditions": [{"property": "name", "operator": "startsWith", "value": ...}]}``."""
    try:
        spec = json.loads(query_text(environ, "filter"))
        condition, = spec["conditions"]
        if (condition["property"], condition["operator"]) != ("name", "startsWith"):
            raise ValueError
        prefix = condition["value"].lower()
        if not prefix:
            raise ValueError
    except (TypeError, ValueError, KeyError, AttributeError):
        raise Reply("400 Bad Request",
                    '{"error":"Cannot parse entities filter","details":""}') from None
    limit = query_int(environ, "limit", 10000)
    return page(environ, session, session.search(prefix, limit + 1), limit, spec)


def list_orders(environ, session):
    """The ``order-with-details`` plan, as JSON text: orders, then their customers,
    lines and products, one statement per level, a shared row written once."""
    if query_text(environ, "fetchPlan") != "order-with-details":
        raise Reply("400 Bad Request", '{"error":"Unsupported fetch plan","details":""}')
    orders = session.orders(query_int(environ, "limit", 10000))
    size = len(ORDER)
    customers = {row[0]: customer_json(row)
                 for row in session.customers_in(list({row[size] for row in orders}))}
    lines = session.lines_in([row[0] for row in orders])
    size = len(LINE)
    products = {row[0]: (row[2], _product(row, row[2]))
                for row in session.products_in(list({row[size] for row in lines}))}
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


def load_customer(environ, session, raw_id):
    try:
        key = str(uuid.UUID(raw_id))
    except ValueError:
        key = None
    row = key and session.load(key)
    if not row:
        raise Reply("404 Not Found", json.dumps(
            {"error": "Entity not found",
             "details": f"Entity Customer with id {raw_id} not found"}))
    return "200 OK", customer_json(row), [("ETag", _etag(session, key, row[1]))]


def _etag(session, key, version):
    """restsvc's ETag of the customer ``key`` at ``version`` read along ``_base``."""
    tag = hashlib.blake2b(f"{key}{session.tag_shape}".encode("utf-8"), digest_size=9).hexdigest()
    return f'"{version}-{tag}"'


def _now_text():
    """restsvc's date-time form: ``2024-01-01T09:00:00.5`` (to the millisecond, cut, no
    trailing zeros)."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    text = now.replace(microsecond=now.microsecond - now.microsecond % 1000).isoformat()
    return text.rstrip("0").rstrip(".") if "." in text else text


def create_customer(environ, session, user):
    """``responseFetchPlan=_base``: the full entity. ``session.create`` writes the
    customer, its history item and its change event in one transaction."""
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
    row = (new_id, 1, name, email, grade, birth_date, None, now, None, user, user, now, None,
           None, TENANT)
    given = [(key, value) for key, value in (("name", name), ("email", email), ("grade", grade),
                                             ("birthDate", birth_date)) if value is not None]
    changes = json.dumps([{"name": key, "oldValue": None, "newValue": value} for key, value in given],
                         ensure_ascii=False, separators=(",", ":"))
    session.create((new_id, name, email, grade, birth_date, now, user, user, now, TENANT),
                   (uuid.uuid4().hex, new_id, user, now, changes),
                   (new_id, json.dumps([key for key, _ in given]), user, now))
    return "201 Created", _customer(row, name), [("Location", f"{PREFIX}/{new_id}"),
                                                 ("ETag", _etag(session, new_id, 1))]


def route(environ, session, user):
    path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
    if path.rstrip("/") == PREFIX:
        if method == "GET":
            return list_customers(environ, session)
        if method == "POST":
            return create_customer(environ, session, user)
    elif path == PREFIX + "/search":
        if method == "GET":
            return search_customers(environ, session)
    elif path == ORDERS:
        if method == "GET":
            return list_orders(environ, session)
    elif path.startswith(PREFIX + "/") and "/" not in path[len(PREFIX) + 1:]:
        if method == "GET":
            return load_customer(environ, session, path[len(PREFIX) + 1:])
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


def make_app(session_class):
    """The WSGI app; a ``session_class()`` per worker thread, made at its first request."""
    local = threading.local()

    def app(environ, start_response):
        answer_id = request_id(environ)
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = session_class()
        try:
            status, body, headers = route(environ, session, check_token(environ, session))
        except Reply as reply:
            status, body, headers = reply.status, reply.body, reply.headers
        payload = body.encode("utf-8")
        start_response(status, [*headers, ("Content-Type", JSON_TYPE),
                                ("Content-Length", str(len(payload))), ("X-Request-Id", answer_id)])
        return [payload]
    return app
