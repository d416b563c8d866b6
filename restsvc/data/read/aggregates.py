"""Aggregates: counts, sums, averages, minima and maxima per group, in one query.

A request names ``groupBy`` items (attributes, to-one paths, or a date part
of a date attribute: ``year(date)``, ``month(date)`` = year and month,
``day(date)``), ``count``, and attributes for ``countDistinct``, ``sum``,
``avg``, ``min`` and ``max``; ``having`` filters the groups (conditions on
``count``, ``sum.amount``...), ``sort`` orders them (``-count,grade``) and
``limit`` bounds how many come back. Every path is resolved as a filter's
is, under the caller's attribute permissions (a hidden attribute, or a
reference to an entity the caller may not read, is unknown here as there;
a JSON value, which may hold values hidden from the caller, is refused),
and the caller's row-level rules apply before aggregating.
"""
import decimal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import peewee

from ...db import is_sqlite
from ...errors import BadRequest
from ...jsonio import JsonObject, JsonValue
from ..access import Access, require
from .filters import compares_values, parse_filter, parse_path, value_kind
from .query import EntityQuery, Expression, Path, _all

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty

# A value as the database driver gives it (whatever the column holds: the
# converters are int, str, float and fields' python_value) -> its JSON form.
ToJson = Callable[[Any], JsonValue]

FUNCTIONS = ("countDistinct", "sum", "avg", "min", "max")
_KINDS = {"countDistinct": None, "sum": ("number",), "avg": ("number",),
          "min": ("number", "date", "time"), "max": ("number", "date", "time")}
_SQL: dict[str, Callable[[peewee.ColumnBase], peewee.ColumnBase]] = {
    "countDistinct": lambda column: peewee.fn.COUNT(column.distinct()),
    "sum": peewee.fn.SUM, "avg": peewee.fn.AVG, "min": peewee.fn.MIN, "max": peewee.fn.MAX}
_PARTS = {"year": ("%Y", "YYYY"), "month": ("%Y-%m", "YYYY-MM"), "day": ("%Y-%m-%d", "YYYY-MM-DD")}
_COMPARE = {"=": "__eq__", "<>": "__ne__", ">": "__gt__", ">=": "__ge__", "<": "__lt__",
            "<=": "__le__"}
MAX_ITEMS = 16


class _Result(NamedTuple):
    """One column of the answer: its key, what SQL selects, how its value is
    written, and whether it is a group's key (else an aggregate)."""
    key: str
    expression: peewee.ColumnBase
    to_json: ToJson
    grouped: bool


def _bad(details: str) -> BadRequest:
    return BadRequest("Invalid aggregate request", details)


def names(value: JsonValue, key: str) -> list[str]:
    """A list of names: a JSON array of strings or one comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [item.strip() for item in value.split(",") if item.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad(f"{key} must be a list of attribute names")
    if len(value) > MAX_ITEMS:
        raise _bad(f"{key} may name at most {MAX_ITEMS} items")
    checked: list[str] = value
    return checked


class _Aggregate:
    def __init__(self, access: Access, meta: "MetaClass") -> None:
        self.access = access
        self.meta = meta
        self.query = EntityQuery(meta, access)
        self.results: list[_Result] = []
        self.by_key: dict[str, _Result] = {}

    def path(self, dotted: str) -> Path:
        try:
            path = parse_path(self.meta, dotted, self.access.permissions, self.access.session)
        except BadRequest as exc:
            raise _bad(exc.details) from None
        if any(prop.is_collection for prop in path):
            raise _bad(f"{dotted} crosses a collection: only to-one paths can be aggregated")
        if not compares_values(path[-1]):
            raise _bad(f"{dotted} is a JSON value: it can be filtered by isNull and notEmpty "
                       f"only, not grouped or aggregated")
        return path

    def add(self, key: str, expression: peewee.ColumnBase, to_json: ToJson, grouped: bool = False) -> None:
        if key in self.by_key:
            raise _bad(f"{key} is asked for twice")
        result = _Result(key, expression, to_json, grouped)
        self.results.append(result)
        self.by_key[key] = result

    def group(self, item: str) -> None:
        part: str | None = None
        dotted = item
        if item.endswith(")") and "(" in item:
            part, dotted = item[:-1].split("(", 1)
            if part not in _PARTS:
                raise _bad(f"Unknown date part {part}: year, month or day")
        path = self.path(dotted)
        prop = path[-1]
        column = self.query.column(path)
        if part is None:
            self.add(item, column, _converter(prop, column), grouped=True)
            return
        if value_kind(prop) != "date":
            raise _bad(f"{dotted} is not a date: {part}() needs one")
        sqlite_format, pg_format = _PARTS[part]
        expression = (peewee.fn.strftime(sqlite_format, column)
                      if is_sqlite(self.access.database) else peewee.fn.to_char(column, pg_format))
        self.add(item, expression, int if part == "year" else str, grouped=True)

    def function(self, name: str, dotted: str) -> None:
        path = self.path(dotted)
        prop = path[-1]
        kinds = _KINDS[name]
        if kinds is not None and value_kind(prop) not in kinds:
            raise _bad(f"{name} is not available for {dotted} ({prop.type_name})")
        column = self.query.column(path)
        to_json: ToJson = int if name == "countDistinct" else _converter(prop, column, name)
        self.add(f"{name}.{dotted}", _SQL[name](column), to_json)

    def having(self, spec: JsonValue, depth: int = 0) -> Expression | None:
        if not isinstance(spec, dict) or not isinstance(spec.get("conditions"), list) or depth > 8:
            raise _bad("having is a group of conditions: {\"conditions\": [...]}")
        kind = str(spec.get("group", "AND")).upper()
        parts: list[Expression | None] = []
        for item in spec["conditions"][:MAX_ITEMS * 4]:
            if isinstance(item, dict) and "conditions" in item:
                parts.append(self.having(item, depth + 1))
                continue
            if not isinstance(item, dict) or item.get("operator") not in _COMPARE:
                raise _bad("A having condition has a property, an operator (=, <>, >, >=, <, "
                           "<=) and a value")
            named = item.get("property")
            found = self.by_key.get(named) if isinstance(named, str) else None
            if found is None:
                raise _bad(f"having names {item.get('property')}, which is not asked for")
            expression = found.expression
            value = item.get("value")
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal, str)):
                raise _bad("A having value is a number or a text")
            if isinstance(value, decimal.Decimal) and is_sqlite(self.access.database):
                value = float(value)
            parts.append(getattr(expression, _COMPARE[item["operator"]])(peewee.Value(value)))
        return _all(parts, kind == "OR")

    def order(self, sort: JsonValue) -> list[peewee.Ordering]:
        terms: list[peewee.Ordering] = []
        for item in names(sort, "sort"):
            key = item.lstrip("+-")
            found = self.by_key.get(key)
            if found is None:
                raise _bad(f"sort names {key}, which is not asked for")
            column = found.expression
            terms.append(column.desc() if item.startswith("-") else column.asc())
        return terms


def aggregate(access: Access, meta: "MetaClass", spec: JsonValue, max_groups: int
              ) -> list[JsonObject]:
    """Groups of ``meta`` rows with their aggregates, as JSON-ready dicts:
    ``{"group": {...}, "count": n, "sum": {"amount": ...}, ...}``."""
    require(access, meta, "read")
    if not isinstance(spec, dict):
        raise _bad("The request must be a JSON object")
    work = _Aggregate(access, meta)
    for item in names(spec.get("groupBy"), "groupBy"):
        work.group(item)
    count = spec.get("count", False)
    if count is not None and not isinstance(count, bool):
        raise _bad("count must be true or false")
    if count:
        work.add("count", peewee.fn.COUNT(peewee.SQL("*")), int)
    for name in FUNCTIONS:
        for dotted in names(spec.get(name), name):
            work.function(name, dotted)
    if len(work.results) == len([r for r in work.results if r.grouped]):
        raise _bad("Ask for at least one of count, countDistinct, sum, avg, min, max")
    limit: JsonValue = spec.get("limit", max_groups)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= max_groups:
        raise _bad(f"limit must be a whole number from 0 to {max_groups}")
    tree = None
    if spec.get("filter") is not None:
        tree = parse_filter(meta, spec["filter"], access.permissions, access.session)
    condition = work.query.where(tree)
    having = work.having(spec["having"]) if spec.get("having") is not None else None
    order = work.order(spec.get("sort"))
    select = work.query.apply_joins(meta.model.select(*[r.expression for r in work.results]))
    if condition is not None:
        select = select.where(condition)
    grouped = [r.expression for r in work.results if r.grouped]
    if grouped:
        select = select.group_by(*grouped)
    if having is not None:
        select = select.having(having)
    select = select.order_by(*(order or grouped)).limit(limit)
    sql, params = select.sql()
    rows = access.database.execute_sql(sql, params).fetchall()  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    return [_answer(work.results, row) for row in rows]


def _answer(results: Sequence[_Result], row: Sequence[object]) -> JsonObject:
    answer: JsonObject = {}
    for result, raw in zip(results, row):
        key = result.key
        value = None if raw is None else result.to_json(raw)
        if result.grouped:
            answer.setdefault("group", {})[key] = value
        elif key == "count":
            answer["count"] = value
        else:
            name, attribute = key.split(".", 1)
            answer.setdefault(name, {})[attribute] = value
    return answer


def _converter(prop: "MetaProperty", column: peewee.ColumnBase, function: str | None = None
               ) -> ToJson:
    """A raw database value -> its JSON form (decimals stay exact)."""
    field = getattr(column, "field", column)     # a join's alias -> its field
    assert isinstance(field, peewee.Field)
    if prop.is_reference:
        target = prop.related.properties["id"]
        target_json = target.json_value
        assert target_json is not None      # an id's datatype
        return lambda raw: target_json(target.field.python_value(raw))
    if function in ("sum", "avg") and isinstance(field, peewee.DecimalField):
        places = decimal.Decimal(1).scaleb(-field.decimal_places)

        def exact(raw: object) -> decimal.Decimal:
            number = decimal.Decimal(str(raw))
            return number.quantize(places) if function == "sum" else number
        return exact
    if function == "avg":
        return float

    def written(raw: object) -> JsonValue:
        convert = prop.json_value
        assert convert is not None      # a datatype's or an enum's, as aggregated values have
        return convert(field.python_value(raw))  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    return written
