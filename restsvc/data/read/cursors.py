"""Cursor paging: the next page starts after the sort key of the last row given.

A cursor is the sort key of a page's last row (the values of the sort's
columns, the id last as the tie-breaker) signed with ``svc.secret-key`` and
bound to the entity, the sort and the filter: it cannot be made up or moved
to another query. It only says where a page starts; the caller's row-level
rules apply to every page as to any query, so no cursor shows a row they
hide. The next page is ``WHERE <sort key> > <cursor>`` (keyset): as cheap
deep in a table as at its start, and rows inserted or deleted meanwhile move
no row from one page to another.

The token is made and read here (``Cursors``), in the form itsdangerous'
``URLSafeSerializer`` gives (salt ``restsvc.cursor``), so cursors handed out
before, by it or by this code, still read: ``<payload>.<signature>``, both
URL-safe base64 without padding; the payload the compact JSON of
``[binding, sort key]`` (zlib-compressed after a leading ``.`` when
itsdangerous found that shorter; this code never compresses), the signature
its HMAC-SHA1 with the key ``SHA1(salt + "signer" + secret key)``.
"""
import base64
import datetime
import decimal
import hashlib
import hmac
import json
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import peewee

from ...db import is_sqlite, execute
from ...pgpool import UUID_OID
from ...errors import BadRequest
from ..memo import entity_facts
from ..columns import stored
from .query import EntityQuery, _all

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ..access import Access

MAX_CURSOR = 4096       # characters of a cursor from a request
_MEMO_MAX = 256         # sorts remembered per entity (bindings) or permissions (columns)
_SALT = b"restsvc.cursor"

# A value of a sort key as the database stores it (text, numbers, dates and
# times, UUIDs, bytes, None), as it goes into and comes out of a cursor.
SortValue = Any
# A filter as the request gave it (any JSON).
FilterSpec = Any

_COMPACT = json.JSONEncoder(separators=(",", ":"))     # what json.dumps(separators=...) builds per call


def invalid_cursor(details: str = "The cursor is not valid for this request") -> BadRequest:
    return BadRequest("Invalid cursor", details)


class Cursors:
    """Cursor tokens of one secret key: made by ``token``, read by ``key``."""

    def __init__(self, secret_key: str | bytes) -> None:
        secret = secret_key.encode("utf-8") if isinstance(secret_key, str) else secret_key
        self._key = hashlib.sha1(_SALT + b"signer" + secret).digest()

    def token(self, meta: "MetaClass", sort: str | None, filter_spec: FilterSpec,
              key: Sequence[SortValue]) -> str:
        payload = _COMPACT.encode([_binding(meta, sort, filter_spec),
                                   [_encode(v) for v in key]]).encode("utf-8")
        text = _base64(payload)
        return f"{text}.{self._signature(text)}"

    def key(self, token: object, meta: "MetaClass", sort: str | None,
            filter_spec: FilterSpec) -> list[SortValue]:
        """The sort key a cursor from a request holds (400 when it is not one
        this service made for this entity, sort and filter)."""
        if not isinstance(token, str) or not token or len(token) > MAX_CURSOR:
            raise invalid_cursor()
        text, _, signature = token.rpartition(".")
        try:
            if not text or not hmac.compare_digest(signature.encode("utf-8"),
                                                   self._signature(text).encode("ascii")):
                raise invalid_cursor()
            binding, values = json.loads(_payload(text))
            if binding != _binding(meta, sort, filter_spec):
                raise invalid_cursor("The cursor was made for another entity, sort or filter")
            return [_decode(value) for value in values]
        except (ValueError, TypeError, KeyError, ArithmeticError, zlib.error):
            raise invalid_cursor() from None

    def _signature(self, text: str) -> str:
        # hmac.digest: the one-shot C path (the key derived once, not per cursor).
        return _base64(hmac.digest(self._key, text.encode("utf-8"), "sha1"))


def _base64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _payload(text: str) -> bytes:
    """The JSON text of a signed payload (base64, after ``.``: zlib-compressed)."""
    compressed = text.startswith(".")
    data = text[1:] if compressed else text
    raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))      # binascii.Error: a ValueError
    if not compressed:
        return raw
    inflate = zlib.decompressobj()
    raw = inflate.decompress(raw, 4 * MAX_CURSOR)
    if inflate.unconsumed_tail:
        raise ValueError("a cursor's payload too long")
    return raw


def _binding(meta: "MetaClass", sort: str | None, filter_spec: FilterSpec) -> str:
    if filter_spec is None:         # the usual page: worked out once per entity and sort
        unfiltered = entity_facts(meta).cursor_bindings
        binding = unfiltered.get(sort)
        if binding is None:
            if len(unfiltered) >= _MEMO_MAX:       # sort texts come from requests
                unfiltered.clear()
            binding = unfiltered[sort] = _make_binding(meta, sort, None)
        return binding
    return _make_binding(meta, sort, filter_spec)


def _make_binding(meta: "MetaClass", sort: str | None, filter_spec: FilterSpec) -> str:
    text = json.dumps(filter_spec, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
    return f"{meta.name}:{sort or ''}:{digest}"


_TAGS: dict[str, Callable[[str], SortValue]] = {
    "d": decimal.Decimal, "dt": datetime.datetime.fromisoformat,
    "da": datetime.date.fromisoformat, "t": datetime.time.fromisoformat, "u": uuid.UUID,
    "b": bytes.fromhex}


def _encode(value: SortValue) -> SortValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, decimal.Decimal):
        return {"d": str(value)}
    if isinstance(value, datetime.datetime):        # before date: a datetime is a date
        return {"dt": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"da": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"t": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"u": str(value)}
    if isinstance(value, bytes):
        return {"b": value.hex()}
    raise TypeError(f"cannot put a {type(value).__name__} into a cursor")


def _decode(value: SortValue) -> SortValue:
    if isinstance(value, dict):
        (tag, text), = value.items()
        return _TAGS[tag](text)
    return value


class PageRow(Protocol):
    """A row of a page as ``sort_key`` reads it: its values by attribute name."""

    def __contains__(self, name: object, /) -> bool: ...
    def __getitem__(self, name: str, /) -> Any: ...


class PageRows(Protocol):
    """A page's rows as ``sort_key`` reads them: the last one, and all from the end."""

    def __getitem__(self, index: int, /) -> PageRow: ...
    def __reversed__(self) -> Iterator[PageRow]: ...


class _SortColumns(NamedTuple):
    columns: list[Any]                          # the sort's columns (Peewee nodes)
    own: list[str | None]                       # each one's attribute, None: not the entity's own
    storing: list[Callable[[Any], Any] | None]  # each own one's ``stored`` function


def sort_key(access: "Access", meta: "MetaClass", sort: str | None,
             rows: PageRows) -> list[SortValue] | None:
    """The sort key of the last of ``rows``, as the database stores it (no
    conversion when compared). Taken from the row when it holds every sort
    column (the id alone, or attributes of the entity's own that the plan
    loaded); else one query (more only when that row was deleted
    meanwhile). None when no row is left."""
    last, known = rows[-1], _sort_columns(access, meta, sort)
    key: list[SortValue] = []
    for store, name in zip(known.storing, known.own):
        if store is None or name is None or name not in last:
            break
        key.append(None if last[name] is None else store(last[name]))
    else:
        return key
    query = EntityQuery(meta, access)
    columns = [column for column, _ in query.sort_terms(sort)]
    select = query.apply_joins(meta.model.select(*columns))
    for row in reversed(rows):
        sql, params = select.where(meta.model.id == row["id"]).limit(1).sql()
        cursor = execute(access.database, sql, params)
        found = cursor.fetchone()
        if found is not None:
            return [_driver_value(value, column[1])
                    for value, column in zip(found, cursor.description)]
    return None


def _driver_value(value: SortValue, type_code: object) -> SortValue:
    """A value the database gave, as a cursor holds it: bytes, not a
    memoryview; a PostgreSQL uuid (which restsvc's connections read as text,
    db.py) as ``uuid.UUID``, as the driver used to give it, so cursors keep
    their form."""
    if isinstance(value, memoryview):
        return bytes(value)
    if type_code == UUID_OID and isinstance(value, str):
        return uuid.UUID(value)
    return value


def _sort_columns(access: "Access", meta: "MetaClass", sort: str | None) -> _SortColumns:
    """(the sort's columns, the attribute name of each or None when it is not
    one of the entity's own, each column's ``stored`` function), worked out
    once per permissions, entity and sort: hidden attributes leave the sort
    as the caller's permissions say."""
    memo: dict[tuple[str, str | None], _SortColumns] = \
        access.permissions.memo.setdefault("sort_columns", {})
    found = memo.get((meta.name, sort))
    if found is None:
        names = _own_attributes(meta)
        columns = [column for column, _ in EntityQuery(meta, access).sort_terms(sort)]
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        own = [names.get(id(column)) for column in columns]
        found = memo[(meta.name, sort)] = _SortColumns(columns, own, [
            None if name is None else stored(column) for column, name in zip(columns, own)])
    return found


def _own_attributes(meta: "MetaClass") -> dict[int, str]:
    """id() of the entity's own columns (Peewee fields, not their aliases in
    joins) -> their attribute names."""
    facts = entity_facts(meta)
    found = facts.cursor_columns
    if found is None:
        found = facts.cursor_columns = {
            id(prop.field): name for name, prop in meta.properties.items()
            if prop.field is not None and prop.persistent and not prop.is_reference
            and not prop.is_embedded and prop.field.model is meta.model}
    return found


def after_key(database: peewee.Database, terms: Sequence[tuple[Any, bool]],
              key: Sequence[SortValue]) -> Any:
    """Rows after ``key`` in the order of ``terms`` ((column, descending) pairs,
    the id last), nulls where each database sorts them: SQLite first when
    ascending, PostgreSQL last."""
    if len(key) != len(terms):
        raise invalid_cursor("The cursor was made for another sort")
    sqlite = is_sqlite(database)
    options: list[Any] = []
    equal: list[Any] = []
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


def _range_start(term: tuple[Any, bool], value: SortValue, sqlite: bool) -> Any:
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


def _nullable(column: Any) -> bool:
    """Whether a sort column can hold NULL: a column of a joined entity can
    (no row joined), as can an optional one; a required one of the root, the
    id above all, cannot, and its range then stays one an index serves
    (PostgreSQL does not scan a range under ``OR ... IS NULL``)."""
    return (isinstance(column, peewee.FieldAlias) or not isinstance(column, peewee.Field)
            or column.null)
