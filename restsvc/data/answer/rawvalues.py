"""Database values -> JSON text, without Python objects in between.

Each column's writer is worked out once (``raw_writer``): 32 hex digits ->
the UUID's text by slicing, a stored enum id -> its quoted name by one look-up,
the ISO text SQLite stores for a date or date-time -> the answer's form;
anything else goes through the loader's conversion (``columns.converter``)
and the value's text writer (``value_writer``: a Python value -> its JSON
text, for transient attributes and records too).
"""
import datetime
import itertools
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple, cast

import peewee

from ...jsonio import quoted, value_text
from ...model.fields import EnumField
from ...model.datatypes import DATATYPES
from ..columns import Converter, DbValue, RowValue, _uuid, converter
from .generated import Generated

if TYPE_CHECKING:
    from ...model.meta import MetaProperty

# A database value (not None) of a column -> its JSON text, or None where the
# loader would have made it None (an unknown enum id).
Writer = Callable[[DbValue], str | None]
# A value as loaded rows hold it -> its JSON text (``value_writer``).
TextWriter = Callable[[RowValue], str | None]

_AS_IS = DATATYPES["string"].to_json       # the identity: the value is its JSON


def value_writer(prop: "MetaProperty") -> TextWriter:
    """A Python value (not None) of the property -> its JSON text: a stored
    attribute whose JSON form is a string (text, ids, dates, enums) is quoted
    without asking its type; the names of enum constants are quoted once."""
    convert = prop.json_value
    if prop.field is not None and prop.meta_enum is not None:
        names = {member: quoted(member.name) for member in prop.meta_enum.enum_class}
        return names.__getitem__
    strings = prop.field is not None and (
        prop.datatype is not None and prop.datatype.json_schema.get("type") == "string")
    if convert is None or convert is _AS_IS:
        return quoted if strings else value_text
    if strings:
        return lambda value: quoted(convert(value))
    return lambda value: value_text(convert(value))


def plain_text(prop: "MetaProperty") -> bool:
    """A text attribute whose stored value is its JSON value and instance name."""
    return (isinstance(prop.field, (peewee.CharField, peewee.TextField))
            and not isinstance(prop.field, EnumField) and prop.meta_enum is None
            and prop.datatype is not None and prop.datatype.name == "string")


def raw_writer(prop: "MetaProperty") -> Writer:
    """A database value (not None) of the property's column -> its JSON text, or
    None where the loader would have made it None (an unknown enum id)."""
    text: TextWriter = value_writer(prop)
    convert, field = converter(prop.field), prop.field
    if convert is None:
        return text
    if isinstance(field, EnumField):      # the stored value, as it is or as text
        names: dict[DbValue, str | None] = {}
        for member in field.enum_class:
            names[member.value] = names[str(member.value)] = text(member)
        return names.get
    if convert is _uuid:
        return _uuid_text
    if isinstance(field, peewee.DateTimeField) and prop.datatype is not None \
            and prop.datatype.fraction_digits is not None:
        return _date_time_writer(convert, text, prop.datatype.fraction_digits)
    if isinstance(field, peewee.DateField):
        return _date_writer(convert, text)
    if isinstance(field, peewee.DecimalField):
        return _remembered(_general(convert, text))
    return _general(convert, text)


def id_writer(prop: "MetaProperty") -> Callable[[DbValue], str]:
    """The id is always written as text (an integer id too)."""
    convert = converter(prop.field)
    if convert is _uuid:
        return _uuid_text
    return lambda value: quoted(str(value if convert is None else convert(value)))


class CommonCase(NamedTuple):
    """A writer's common case as Python source over the value ``x``: when
    ``test`` holds, ``text`` is the value's JSON text. The writer is made
    from it (``_with_common_case``) and the row writers write it inline
    (rowwriters.py), so that the common value costs no call. ``names`` are
    the values the source names (bound where it is compiled)."""
    test: str
    text: str
    names: Mapping[str, object] = {}


_COMMON: "weakref.WeakKeyDictionary[Callable[..., object], CommonCase]" = \
    weakref.WeakKeyDictionary()


def common_case(write: Callable[..., object]) -> CommonCase | None:
    """The common case ``write`` was made with, if any."""
    try:
        return _COMMON.get(write)
    except TypeError:       # no weak reference to it (a built-in): none
        return None


def _with_common_case(name: str, common: CommonCase, rest: Writer) -> Writer:
    """A writer: ``common`` where its test holds, else ``rest``."""
    write = cast(Writer, Generated(rest=rest, **common.names).function("x", [
        f"    if {common.test}:", f"        return {common.text}", "    return rest(x)"],
        f"<{name}>"))
    _COMMON[write] = common
    return write


def _uuid_other(value: DbValue) -> str:
    return quoted(value if value.__class__ is str else _uuid(value))


# Never None (as ``quoted`` and ``value_text``: see NEVER_NONE). SQLite stores
# 32 hex digits; PostgreSQL's uuid comes as its canonical text (pgpool.py).
_uuid_text = cast(Callable[[DbValue], str], _with_common_case("uuid_text", CommonCase(
    'x.__class__ is str and ((k := len(x)) == 32 or (k == 36 and x[8] == "-"))',
    """(f'"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"' if k == 32 """
    """else f'"{x}"')"""), _uuid_other))


def _date_writer(convert: Converter, text: TextWriter) -> Writer:
    """SQLite's ``2024-01-31`` is the answer's text; anything else is parsed."""
    fallback = _general(convert, text)
    if text(datetime.date(2024, 1, 31)) != '"2024-01-31"':
        return fallback

    return _with_common_case("date_text", CommonCase(
        'x.__class__ is str and len(x) == 10 and x[4] == "-" == x[7]', """f'"{x}"'"""), fallback)


def _date_time_writer(convert: Converter, text: TextWriter, digits: int) -> Writer:
    """The ISO text a date-time is read as (SQLite's ``2024-01-31
    09:00:00[.ffffff]``, what Peewee stores; PostgreSQL's the same with the
    fraction's trailing zeros dropped, db.read_rows) -> the answer's
    ``2024-01-31T09:00:00[.f]``, at most ``digits`` digits of the fraction
    (the datatype's); without a fraction inline; anything else is parsed.
    Used only when it writes samples of both forms as the datatype's own
    text does."""
    fallback = _general(convert, text)
    end = 20 + digits

    def write(value: DbValue) -> str | None:
        if value.__class__ is str and value[10:11] == " ":
            if len(value) == 19:
                return f'"{value[:10]}T{value[11:]}"'
            if 20 < len(value) <= 26 and value[19] == ".":
                fraction = value[20:end].rstrip("0")
                return f'"{value[:10]}T{value[11:19]}.{fraction}"' if fraction \
                    else f'"{value[:10]}T{value[11:19]}"'
        return fallback(value)
    samples = [datetime.datetime(2024, 1, 31, 9, 0, 0, micro)
               for micro in (0, 500000, 123456, 120000, 400, 1000, 999999)]
    if any(write(form) != fallback(sample) for sample in samples
           for form in (str(sample), str(sample).rstrip("0") if sample.microsecond else "")
           if form):
        return fallback
    return _with_common_case("date_time_text", CommonCase(
        'x.__class__ is str and len(x) == 19 and x[10] == " "',
        """f'"{x[:10]}T{x[11:]}"'"""), write)


def _remembered(write: Writer) -> Writer:
    """``write``, keeping the text of each value other than zero (a decimal
    column holds few distinct values, prices above all, and each costs two
    roundings); zero is written each time (-0.0 equals 0.0). Values that are
    equal (649, 649.0, Decimal("649.00")) are the same number, which the
    column writes at its own scale: they share one text. A text kept is the
    common case: a row writer looks it up inline."""
    memo: dict[DbValue, str | None] = {}

    def remembered(value: DbValue) -> str | None:
        text = memo.get(value)
        if text is None:
            if not value:
                return write(value)
            if len(memo) >= _REMEMBERED:
                memo.clear()
            text = memo[value] = write(value)
        return text
    name = f"memo{next(_MEMOS)}"
    return _with_common_case("decimal_text", CommonCase(
        f"(t := {name}.get(x)) is not None", "t", {name: memo}), remembered)


_MEMOS = itertools.count()


_REMEMBERED = 4096      # texts kept per column and type


def _general(convert: Converter, text: TextWriter) -> Writer:
    def write(value: DbValue) -> str | None:
        value = convert(value)
        return None if value is None else text(value)
    return write


# The writers that never give None (the row writers then need no check).
NEVER_NONE: set[Callable[[DbValue], str]] = {quoted, value_text, _uuid_text}
