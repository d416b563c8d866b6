"""Database values -> Python values, fast.

The loader reads rows with a plain cursor and converts each column once.
Ids and other UUIDs stay strings in canonical form; everything that
compares ids (``parse_id``, the loader, the importer) uses that form.
Peewee's own converters are general (a DateField tries several formats);
these take the shape each database really returns: SQLite gives ISO text
for dates, hex text for UUIDs and numbers for decimals, PostgreSQL gives
native objects, except UUIDs: restsvc's connections read them as their
canonical text (db.py), which ``_uuid`` keeps as it is.
"""
import datetime
import decimal
import enum
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast
from operator import itemgetter

import peewee

from ..db import in_list, is_sqlite, list_param
from ..model.fields import EnumField
from .memo import UNKNOWN, column_facts, entity_facts

if TYPE_CHECKING:
    from ..model.meta import MetaClass

# A value as the database driver gives it or takes it: text, numbers, bytes,
# dates and times, None... (the column and the database decide which).
DbValue = Any
# A column's value as loaded rows hold it (``converter``'s result): ids as
# canonical UUID text, dates as ``datetime.date``, decimals at the column's
# scale, enum members...: a database value in its Python form.
RowValue = Any
# A database value (not None) -> the value loaded rows hold.
Converter = Callable[[DbValue], RowValue]
# (position in the row, converter) of each column that is converted.
Conversions = Sequence[tuple[int, Converter]]
# A row read by the loader: attribute name -> value.
Row = dict[str, RowValue]


def _uuid(value: DbValue) -> str:
    """UUIDs are kept in their canonical text form: that is what JSON shows,
    Peewee accepts it as a parameter, and SQLite's 32 hex digits become it by
    slicing rather than by a round trip through uuid.UUID."""
    if isinstance(value, str):
        if len(value) == 32:
            return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
        return value
    return str(value)


def _iso(kind: type[datetime.date] | type[datetime.time]) -> Converter:
    parse = kind.fromisoformat

    def convert(value: DbValue) -> RowValue:
        return parse(value) if isinstance(value, str) else value
    return convert


def _decimal(places: int | None) -> Converter:
    """Decimals at the column's scale: SQLite hands back 649 for a stored 649.00."""
    exponent = decimal.Decimal(1).scaleb(-places) if places is not None else None

    def convert(value: DbValue) -> decimal.Decimal:
        number = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
        return number.quantize(exponent) if exponent is not None else number
    return convert


def _boolean(value: DbValue) -> bool | None:
    return value if value is None else bool(value)


def _enum(enum_class: type[enum.Enum]) -> Converter:
    members = {str(member.value): member for member in enum_class}
    return members.get


def converter(field: "peewee.Field[Any]") -> Converter | None:
    """A one-argument function for the column's values, or None when the
    database value already is the Python value."""
    facts = column_facts(field)
    cached: Converter | None = facts.converter
    if cached is not UNKNOWN:
        return cached
    result: Converter | None
    if getattr(field, "converts_values", False):     # e.g. data/write/history.py JsonField
        result = field.python_value
    elif isinstance(field, peewee.ForeignKeyField):
        result = converter(field.rel_field)
    elif isinstance(field, EnumField):
        result = _enum(field.enum_class)
    elif isinstance(field, peewee.UUIDField):
        result = _uuid
    elif isinstance(field, peewee.DateTimeField):
        result = _iso(datetime.datetime)
    elif isinstance(field, peewee.DateField):
        result = _iso(datetime.date)
    elif isinstance(field, peewee.TimeField):
        result = _iso(datetime.time)
    elif isinstance(field, peewee.DecimalField):
        result = _decimal(field.decimal_places)
    elif isinstance(field, peewee.BooleanField):
        result = _boolean
    elif isinstance(field, (peewee.IntegerField, peewee.FloatField, peewee.CharField,
                            peewee.TextField)):
        result = None
    else:
        result = field.python_value
    facts.converter = result
    return result


def row_id(meta: "MetaClass") -> Callable[[Sequence[DbValue]], RowValue]:
    """A row of database values (the loader's columns, the id first) -> its id,
    converted as the loader converts it; worked out once per entity."""
    facts = entity_facts(meta)
    read: Callable[[Sequence[DbValue]], RowValue] | None = facts.row_id
    if read is None:
        convert = converter(meta.model.id)
        read = facts.row_id = itemgetter(0) if convert is None \
            else (lambda values: convert(values[0]))
    return read


def referred(field: Any) -> Any:
    """The field whose values ``field`` holds: itself, or the one its foreign
    key (through any chain of them) refers to."""
    while isinstance(field, peewee.ForeignKeyField):
        field = field.rel_field
    return field


def key_type(field: "peewee.Field[Any]") -> str:
    """PostgreSQL's type of ``field``'s values (``db.in_list``)."""
    field = referred(field)
    if isinstance(field, peewee.UUIDField):
        return "uuid"
    return "bigint" if isinstance(field, peewee.IntegerField) else "text"


def among(field: "peewee.Field[Any]", keys: Collection[Any]) -> peewee.Expression:
    """The condition "``field`` is one of ``keys``" (ids, as rows hold them or
    as the database takes them) with one parameter however many there are
    (``db.in_list``): one text per statement, and no Peewee node to build
    per key."""
    if len(keys) == 1:
        return cast(peewee.Expression, field == next(iter(keys)))
    database = field.model._meta.database
    kind = key_type(field)
    values = list(map(stored(field), keys)) if is_sqlite(database) else list(keys)
    return cast(peewee.Expression, peewee.NodeList((field, peewee.SQL(
        in_list(database, kind), [list_param(database, values, kind)]))))


def stored(field: "peewee.Field[Any]") -> Callable[[RowValue], DbValue]:
    """A one-argument function: a Python value -> the column's value as the
    database takes it (``field.db_value``). Ids are canonical UUID text here
    (rows and ``parse_id`` make them so): the 32 hex digits Peewee binds are
    that text without its dashes, with no round trip through ``uuid.UUID``."""
    facts = column_facts(field)
    cached: Callable[[RowValue], DbValue] | None = facts.stored
    if cached is not None:
        return cached
    result: Callable[[RowValue], DbValue]
    db_value: Callable[[RowValue], DbValue] = field.db_value
    if isinstance(referred(field), peewee.UUIDField):
        def result(value: RowValue) -> DbValue:
            if isinstance(value, str) and len(value) == 36:
                return value.replace("-", "").lower()
            return db_value(value)
    else:
        result = db_value
    facts.stored = result
    return result


def conversions(converters: Iterable[Converter | None]) -> list[tuple[int, Converter]]:
    """(column index, converter) of the columns that need converting."""
    return [(index, convert) for index, convert in enumerate(converters) if convert is not None]


def convert_rows(rows: Sequence[Sequence[DbValue]], names: Sequence[str],
                 conversions: Conversions) -> list[Row]:
    """Value tuples -> dicts keyed by attribute name (values past ``names`` are
    left out). Many rows are converted a column at a time (a comprehension per
    column), a few a row at a time (setting up the comprehensions would cost more)."""
    if not conversions:
        return [dict(zip(names, values)) for values in rows]
    if len(rows) > 4:
        columns: list[Sequence[DbValue]] = list(zip(*rows))
        for index, convert in conversions:
            columns[index] = [None if value is None else convert(value)
                              for value in columns[index]]
        return [dict(zip(names, values)) for values in zip(*columns)]
    result = []
    for row in rows:
        values = list(row)
        for index, convert in conversions:
            value = values[index]
            if value is not None:
                values[index] = convert(value)
        result.append(dict(zip(names, values)))
    return result
