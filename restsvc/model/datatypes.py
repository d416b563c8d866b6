"""Datatypes: the one home of each datatype's forms.

Every datatype (``DATATYPES[name]``) knows

- its JSON form both ways: ``to_json(value)`` writes a stored Python value as
  a JSON value; ``from_json(value)`` parses a request value (JSON scalars, and
  strings for numbers and booleans, as the reference accepts them);
- its text form both ways (query strings, service parameters, ``text/plain``
  results, CSV cells): ``from_text(text)`` and ``to_text(value)``;
- its JSON Schema: ``json_schema`` (a dict, e.g. ``{"type": "string",
  "format": "date"}``) for generated API documents;
- ``kind``: what the filter operators are chosen by (reference 2.4), and
  ``python_type``: the Python class of its values (service type hints);
- for date-times and times, ``fraction_digits``: how many digits of a second
  its forms write at most (reference 1.4: a ``dateTime`` to the millisecond).

``column_json(datatype, field)`` is the JSON form of one column's values
(a decimal at the column's scale): what every answer, history item, report
and aggregate writes. ``format_utc_instant`` is the one form of the times
restsvc itself stamps on what it sends (events, webhooks, log lines).

The parsers raise ValueError with a short reason. ``text_of(prop, value)``
formats any attribute value (datatype, enum) in its text form.
Typed parameters built on these (enums, entities, arrays, the reference's Java
type names) are in ``valuetypes.py``.
"""
import datetime
import decimal
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus

import peewee

from .fields import DateTimeField, EnumField, FileRefField
from ..numbers import integer_parser, number_of


@dataclass(frozen=True)
class Datatype:
    name: str
    to_json: Callable[[Any], Any]
    from_json: Callable[[Any], Any]
    # The JSON/Python kind the filter operators are chosen by (reference 2.4).
    kind: str
    json_schema: dict[str, Any] = field(default_factory=dict)
    python_type: type = str
    to_text: Callable[[Any], str] = str
    from_text: Callable[[str], Any] = None   # type: ignore[assignment]  # from_json, by __post_init__
    fraction_digits: int | None = None

    def __post_init__(self) -> None:
        if self.from_text is None:
            object.__setattr__(self, "from_text", self.from_json)


def _identity(value: Any) -> Any:
    return value


def _string(value: Any) -> str:
    if isinstance(value, str):
        if "\x00" in value:   # PostgreSQL cannot store it; SQLite's LIKE stops at it
            raise ValueError("NUL characters are not allowed")
        try:
            value.encode("utf-8")   # a JSON "\ud800" escape decodes to a lone surrogate
        except UnicodeEncodeError:
            raise ValueError("not valid Unicode text") from None
        return value
    if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
        return str(number_of(value))
    raise ValueError("expected a string")


def _double(value: Any) -> float:
    number = float(number_of(value))
    if number in (float("inf"), float("-inf")):
        raise ValueError("number out of range")
    return number


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return bool(value == "true")
    raise ValueError("expected true or false")


def _uuid(value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        raise ValueError("expected a UUID string")
    return uuid.UUID(value)


def _iso(parser: Callable[[str], Any]) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("expected an ISO 8601 string")
        return parser(value)
    return parse


def _iso_text(digits: int) -> Callable[[Any], str]:
    """A date-time's or time's ISO text: seconds always, at most ``digits``
    digits of the fraction (cut, not rounded: a stored instant is never written
    later than it was), printed only when non-zero, trailing zeros stripped."""
    unit = 10 ** (6 - digits)

    def write(value: Any) -> str:
        micro = value.microsecond
        if not micro:
            return str(value.isoformat())
        cut = micro - micro % unit
        if not cut:
            return str(value.replace(microsecond=0).isoformat())
        return str(value.replace(microsecond=cut).isoformat()).rstrip("0")
    return write


MICRO_DIGITS, MILLI_DIGITS = 6, 3
format_time = _iso_text(MICRO_DIGITS)
format_datetime = _iso_text(MICRO_DIGITS)       # localDateTime
format_instant = _iso_text(MILLI_DIGITS)        # dateTime (reference 1.4)


def format_utc_instant(value: datetime.datetime) -> str:
    """The times restsvc stamps itself (an event's ``time``, a webhook's
    ``createdDate``; log lines write the same form): UTC, always three digits
    of milliseconds and ``Z``, e.g. ``2026-11-28T20:12:46.034Z``. A naive
    value is taken as UTC (the database keeps instants so)."""
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value.isoformat(timespec="milliseconds") + "Z"


def _parse_datetime(text: str) -> datetime.datetime:
    parsed = datetime.datetime.fromisoformat(text)
    if parsed.tzinfo is not None:  # stored in UTC without an offset
        parsed = parsed.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return parsed


def _parse_time(text: str) -> datetime.time:
    parsed = datetime.time.fromisoformat(text)
    return parsed.replace(tzinfo=None)


# <storage>://<path>?name=<url-encoded name>[&k=v...]: the one shape of a file
# reference. The Files API parses with split_file_ref too, so attribute values
# and the references it hands out always agree; whether a path exists or is
# acceptable is the storage's business (restsvc.files.storage).
FILE_REF = re.compile(r"^(?P<storage>[a-z][a-z0-9+.-]*)://(?P<path>[^?#\s]+)"
                      r"\?name=(?P<name>[^&#\s]*)(?P<extra>&[^#\s]*)?$")
# The same shape for the OpenAPI document: plain groups, which every regex
# dialect reads (ECMAScript writes a named group "(?<name>", Python "(?P<name>").
_PORTABLE_FILE_REF = re.sub(r"\(\?P<\w+>", "(", FILE_REF.pattern)


@dataclass(frozen=True)
class FileRef:
    """A file reference, ``<storage>://<path>?name=<url-encoded file name>[&k=v...]``:
    what a ``fileRef`` attribute or service parameter holds (restsvc.files stores them)."""
    storage: str
    path: str
    name: str
    extra: str = ""       # further "&k=v" parameters, kept as given

    def __str__(self) -> str:
        # quote(safe="") never writes "+", so split_file_ref reads the name back exactly.
        return f"{self.storage}://{self.path}?name={quote(self.name, safe='')}{self.extra}"


def split_file_ref(value: Any) -> FileRef:
    """The reference ``value`` spells; ValueError when malformed."""
    match = FILE_REF.match(value) if isinstance(value, str) else None
    if not match:
        raise ValueError("expected a file reference such as fs://2024/01/31/<uuid>.png?name=photo.png")
    try:
        # unquote_plus: references written by Java's URLEncoder carry "+" for spaces.
        name = unquote_plus(match.group("name"), errors="strict")
    except UnicodeDecodeError:
        raise ValueError("the file name in the reference is not UTF-8") from None
    return FileRef(match.group("storage"), match.group("path"), name, match.group("extra") or "")


def _file_ref(value: Any) -> str:
    split_file_ref(value)
    return str(value)


def _decimal_text(value: Any) -> str:
    return format(value, "f")       # never an exponent: "100.00", not "1.0000E+2"


def _boolean_text(value: Any) -> str:
    return "true" if value else "false"


def _schema(kind: str, format_: str | None = None) -> dict[str, str]:
    return {"type": kind, "format": format_} if format_ else {"type": kind}


# Date-times and times are written without an offset, which the JSON Schema
# formats date-time and time require: patterns say exactly what is written.
_LOCAL_DATE_TIME = {"type": "string",
                    "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$",
                    "description": "ISO 8601 date and time without an offset"}
_LOCAL_TIME = {"type": "string", "pattern": r"^[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$",
               "description": "ISO 8601 time without an offset"}


def _json_text(value: Any) -> str:
    from ..jsonio import dumps     # jsonio imports this module: imported when first used
    return str(dumps(value))


DATATYPES = {datatype.name: datatype for datatype in (
    Datatype("string", _identity, _string, "string", _schema("string")),
    Datatype("int", _identity, integer_parser(32), "number", _schema("integer", "int32"), int),
    Datatype("long", _identity, integer_parser(64), "number", _schema("integer", "int64"), int),
    Datatype("decimal", _identity, number_of, "number", _schema("number"), decimal.Decimal,
             _decimal_text),
    Datatype("double", _identity, _double, "number", _schema("number", "double"), float),
    Datatype("boolean", _identity, _boolean, "boolean", _schema("boolean"), bool, _boolean_text),
    Datatype("uuid", str, _uuid, "uuid", _schema("string", "uuid"), uuid.UUID),
    Datatype("localDate", datetime.date.isoformat, _iso(datetime.date.fromisoformat), "date",
             _schema("string", "date"), datetime.date, datetime.date.isoformat),
    Datatype("localDateTime", format_datetime, _iso(_parse_datetime), "date",
             _LOCAL_DATE_TIME, datetime.datetime, format_datetime,
             fraction_digits=MICRO_DIGITS),
    Datatype("dateTime", format_instant, _iso(_parse_datetime), "date",
             {**_LOCAL_DATE_TIME,
              "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?$",
              "description": "ISO 8601 date and time in UTC without an offset, to the "
                             "millisecond (requests may give one)"},
             datetime.datetime, format_instant, fraction_digits=MILLI_DIGITS),
    Datatype("localTime", format_time, _iso(_parse_time), "time", _LOCAL_TIME,
             datetime.time, format_time, fraction_digits=MICRO_DIGITS),
    # Any JSON value, stored as its text (HistoryItem.changes): written, not filtered by.
    Datatype("json", _identity, _identity, "json", {}, object, _json_text),
    Datatype("fileRef", _identity, _file_ref, "string",
             {"type": "string", "pattern": _PORTABLE_FILE_REF,
              "description": "A file reference: <storage>://<path>?name=<file name>"}),
)}


def column_json(datatype: Datatype, field: object) -> Callable[[Any], Any]:
    """value -> JSON value of one column's values: the datatype's JSON form,
    a decimal at the column's scale (SQLite hands back 649 for a stored
    649.00, a client may send 13.5 for 13.50: the column's scale is the truth)."""
    places = getattr(field, "decimal_places", None)
    if datatype.name == "decimal" and places is not None:
        exponent = decimal.Decimal(1).scaleb(-places)

        def scaled(value: decimal.Decimal) -> decimal.Decimal:
            return value.quantize(exponent)
        return scaled
    return datatype.to_json


def column_text(datatype: Datatype, field: object) -> Callable[[Any], str]:
    """value -> text form of one column's values (a CSV cell): the datatype's
    text form of ``column_json``'s value (a decimal at the column's scale)."""
    to_text = datatype.to_text
    to_json = column_json(datatype, field)
    if to_json is datatype.to_json:
        return to_text

    def scaled(value: Any) -> str:
        return to_text(to_json(value))
    return scaled


def text_of(prop: Any, value: Any) -> str:
    """An attribute value in its text form (a CSV cell, a text/plain body):
    enums by constant name, references by id, None as the empty string."""
    if value is None:
        return ""
    if prop.meta_enum is not None:
        return str(value.name)
    if prop.is_reference:
        return str(value["id"] if isinstance(value, dict) else value)
    return column_text(prop.datatype, prop.field)(value)


# What ``GET /metadata/datatypes`` reports beside id and name (reference 6.4):
# the non-localized formats the JSON values use.
FORMATS = {
    "dateTime": {"format": "yyyy-MM-dd'T'HH:mm:ss.SSS"},
    "int": {"format": "0", "decimalSeparator": ".", "groupingSeparator": ""},
    "long": {"format": "0", "decimalSeparator": ".", "groupingSeparator": ""},
    "decimal": {"format": "0.####", "decimalSeparator": ".", "groupingSeparator": ""},
    "double": {"format": "0.###", "decimalSeparator": ".", "groupingSeparator": ""},
}

# Most specific class first: the first isinstance match wins.
_FIELD_TYPES = (
    (FileRefField, "fileRef"),
    (DateTimeField, "dateTime"),
    (peewee.UUIDField, "uuid"),
    (peewee.BigIntegerField, "long"),
    (peewee.IntegerField, "int"),
    (peewee.DecimalField, "decimal"),
    (peewee.FloatField, "double"),
    (peewee.BooleanField, "boolean"),
    (peewee.DateTimeField, "localDateTime"),
    (peewee.DateField, "localDate"),
    (peewee.TimeField, "localTime"),
    (peewee.CharField, "string"),
    (peewee.TextField, "string"),
)


def datatype_of(field: peewee.Field) -> Datatype | None:
    """The datatype of a Peewee field, or None when restsvc does not map it."""
    if isinstance(field, EnumField):
        return None
    name: str | None = getattr(field, "datatype", None)
    if name is None:
        for field_class, type_name in _FIELD_TYPES:
            if isinstance(field, field_class):
                name = type_name
                break
    return DATATYPES.get(name) if name is not None else None
