"""Cursor paging: the next page starts after the sort key of the last row given.

A cursor is the sort key of a page's last row (the values of the sort's
columns, the id last as the tie-breaker) signed with ``svc.secret-key``
(itsdangerous) and bound to the entity, the sort and the filter: it cannot
be made up or moved to another query. It only says where a page starts; the
caller's row-level rules apply to every page as to any query, so no cursor
shows a row they hide. The next page is ``WHERE <sort key> > <cursor>``
(keyset): as cheap deep in a table as at its start, and rows inserted or
deleted meanwhile move no row from one page to another.
"""
import base64
import datetime
import decimal
import hashlib
import hmac
import json
import uuid

import peewee
from itsdangerous import BadSignature, URLSafeSerializer

from ...db import is_sqlite
from ...errors import BadRequest
from ..columns import stored
from .query import EntityQuery, _all

MAX_CURSOR = 4096       # characters of a cursor from a request
_MEMO_MAX = 256         # sorts remembered per entity (bindings) or permissions (columns)


_COMPACT = json.JSONEncoder(separators=(",", ":"))     # what json.dumps(separators=...) builds per call


def invalid_cursor(details="The cursor is not valid for this request"):
    return BadRequest("Invalid cursor", details)


class Cursors:
    def __init__(self, secret_key):
        self._signer = URLSafeSerializer(secret_key, salt="restsvc.cursor")
        signer = self._signer.make_signer()
        # By its name: hmac.digest's one-shot C path takes a name, not itsdangerous'
        # lazy constructor (which would send it down the pure-Python HMAC).
        self._key, self._digest = signer.derive_key(), signer.digest_method().name

    def token(self, meta, sort, filter_spec, key):
        """What ``URLSafeSerializer.dumps`` makes (its JSON, key and HMAC), without
        trying zlib on a payload this small and without deriving the key again
        for every cursor; ``loads`` reads it as its own."""
        payload = _COMPACT.encode([_binding(meta, sort, filter_spec),
                                   [_encode(v) for v in key]]).encode("utf-8")
        payload = base64.urlsafe_b64encode(payload).rstrip(b"=")
        signature = hmac.digest(self._key, payload, self._digest)
        return f"{payload.decode()}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"

    def key(self, token, meta, sort, filter_spec):
        """The sort key a cursor from a request holds (400 when it is not one
        this service made for this entity, sort and filter)."""
        if not isinstance(token, str) or not token or len(token) > MAX_CURSOR:
            raise invalid_cursor()
        try:
            binding, values = self._signer.loads(token)
            if binding != _binding(meta, sort, filter_spec):
                raise invalid_cursor("The cursor was made for another entity, sort or filter")
            return [_decode(value) for value in values]
        except (BadSignature, ValueError, TypeError, KeyError):
            raise invalid_cursor() from None


def _binding(meta, sort, filter_spec):
    if filter_spec is None:         # the usual page: worked out once per entity and sort
        unfiltered = meta.__dict__.setdefault("_cursor_bindings", {})
        binding = unfiltered.get(sort)
        if binding is None:
            if len(unfiltered) >= _MEMO_MAX:       # sort texts come from requests
                unfiltered.clear()
            binding = unfiltered[sort] = _make_binding(meta, sort, None)
        return binding
    return _make_binding(meta, sort, filter_spec)


def _make_binding(meta, sort, filter_spec):
    text = json.dumps(filter_spec, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
    return f"{meta.name}:{sort or ''}:{digest}"


_TAGS = {"d": decimal.Decimal, "dt": datetime.datetime.fromisoformat,
         "da": datetime.date.fromisoformat, "t": datetime.time.fromisoformat, "u": uuid.UUID,
         "b": bytes.fromhex}


def _encode(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    for tag, kind in (("d", decimal.Decimal), ("dt", datetime.datetime), ("da", datetime.date),
                      ("t", datetime.time), ("u", uuid.UUID), ("b", bytes)):
        if isinstance(value, kind):
            if tag == "b":
                return {tag: value.hex()}
            return {tag: str(value) if tag in ("d", "u") else value.isoformat()}
    raise TypeError(f"cannot put a {type(value).__name__} into a cursor")


def _decode(value):
    if isinstance(value, dict):
        (tag, text), = value.items()
        return _TAGS[tag](text)
    return value


def sort_key(access, meta, sort, rows):
    """The sort key of the last of ``rows``, as the database stores it (no
    conversion when compared). Taken from the row when it holds every sort
    column (the id alone, or attributes of the entity's own that the plan
    loaded); else one query (more only when that row was deleted
    meanwhile). None when no row is left."""
    columns, own, storing = _sort_columns(access, meta, sort)
    last = rows[-1]
    if all(name in last for name in own):
        return [None if last[name] is None else store(last[name])
                for store, name in zip(storing, own)]
    query = EntityQuery(meta, access)
    columns = [column for column, _ in query.sort_terms(sort)]
    select = query.apply_joins(meta.model.select(*columns))
    for row in reversed(rows):
        sql, params = select.where(meta.model.id == row["id"]).limit(1).sql()
        found = access.database.execute_sql(sql, params).fetchone()
        if found is not None:
            return [bytes(value) if isinstance(value, memoryview) else value for value in found]
    return None


def _sort_columns(access, meta, sort):
    """(the sort's columns, the attribute name of each or None when it is not
    one of the entity's own, each column's ``stored`` function), worked out
    once per permissions, entity and sort: hidden attributes leave the sort
    as the caller's permissions say."""
    memo = access.permissions.memo.setdefault("sort_columns", {})
    found = memo.get((meta.name, sort))
    if found is None:
        names = _own_attributes(meta)
        columns = [column for column, _ in EntityQuery(meta, access).sort_terms(sort)]
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        own = [names.get(id(column)) for column in columns]
        found = memo[(meta.name, sort)] = (columns, own, [
            None if name is None else stored(column) for column, name in zip(columns, own)])
    return found


def _own_attributes(meta):
    """id() of the entity's own columns (Peewee fields, not their aliases in
    joins) -> their attribute names."""
    found = meta.__dict__.get("_cursor_columns")
    if found is None:
        found = meta._cursor_columns = {
            id(prop.field): name for name, prop in meta.properties.items()
            if prop.field is not None and prop.persistent and not prop.is_reference
            and not prop.is_embedded and prop.field.model is meta.model}
    return found


def after_key(database, terms, key):
    """Rows after ``key`` in the order of ``terms`` ((column, descending) pairs,
    the id last), nulls where each database sorts them: SQLite first when
    ascending, PostgreSQL last."""
    if len(key) != len(terms):
        raise invalid_cursor("The cursor was made for another sort")
    sqlite = is_sqlite(database)
    options, equal = [], []
    for (column, descending), value in zip(terms, key):
        nulls_last = (not sqlite) != descending
        if value is None:
            beyond = None if nulls_last else column.is_null(False)
            same = column.is_null()
        else:
            value = peewee.Value(value, unpack=False)     # as stored: no conversion
            beyond = column < value if descending else column > value
            if nulls_last and _nullable(column):
                beyond = _all((beyond, column.is_null()), any_of=True)
            same = column == value
        if beyond is not None:
            options.append(_all(equal + [beyond]))
        equal.append(same)
    after = _all(options, any_of=True) or peewee.SQL("1 = 0")
    return _all((_range_start(terms[0], key[0], sqlite), after))


def _range_start(term, value, sqlite):
    """The first sort column's bound, implied by the keyset condition but
    written out: an index on that column then starts its range scan there
    (SQLite does not derive it from the OR)."""
    column, descending = term
    if value is None:
        return None
    value = peewee.Value(value, unpack=False)
    bound = column <= value if descending else column >= value
    if (not sqlite) != descending and _nullable(column):
        return _all((bound, column.is_null()), any_of=True)
    return bound


def _nullable(column):
    """Whether a sort column can hold NULL: a column of a joined entity can
    (no row joined), as can an optional one; a required one of the root, the
    id above all, cannot, and its range then stays one an index serves
    (PostgreSQL does not scan a range under ``OR ... IS NULL``)."""
    return (isinstance(column, peewee.FieldAlias) or not isinstance(column, peewee.Field)
            or column.null)
