"""Search filters: the JSON grammar of reference 2.4, parsed against metadata.

    {"conditions": [
        {"property": "customer.name", "operator": "contains", "value": "bish"},
        {"group": "OR", "conditions": [...]}]}

``parse_filter`` validates a filter and returns a tree of ``Group`` and
``Condition`` with typed values; ``compile_filter`` (in query.py) turns the
tree into SQL. A client filter may only use attributes the caller can see:
a hidden attribute is reported exactly like an unknown one, so a filter
cannot tell them apart.
"""
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Union

from ...errors import BadRequest
from ...model.numbers import NumberOutOfBounds, decimal_fits
from ...model.valuetypes import MAX_ARRAY_ITEMS

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty
    from ...security.roles import Permissions

MAX_DEPTH = 16
MAX_CONDITIONS = 500
MAX_VALUE_LENGTH = 10_000
MAX_IN_VALUES = MAX_ARRAY_ITEMS

_ALL = {"=", "<>", ">", ">=", "<", "<=", "in", "notIn", "contains", "doesNotContain",
        "startsWith", "endsWith", "isNull", "notEmpty"}
_BASIC = {"=", "<>", "in", "notIn", "isNull", "notEmpty"}
_ORDERED = {">", ">=", "<", "<="}
_TEXT = {"contains", "doesNotContain", "startsWith", "endsWith"}
OPERATORS_BY_KIND = {
    "string": _BASIC | _TEXT,
    "number": _BASIC | _ORDERED,
    "date": _BASIC | _ORDERED,
    "time": {"=", "<>", "isNull", "notEmpty"} | _ORDERED,
    "boolean": {"=", "<>", "isNull", "notEmpty"},
    "uuid": _BASIC,
    "enum": _BASIC,
    "reference": _BASIC,
    "json": {"isNull", "notEmpty"},
}


class Condition(NamedTuple):   # named tuples: built per request, cheaper than dataclasses
    path: tuple["MetaProperty", ...]    # the chain, the last one holds the value
    operator: str
    value: Any           # parsed: a Python value, a list for in/notIn, a bool for isNull/notEmpty


class Group(NamedTuple):
    is_or: bool
    items: tuple["Condition | Group", ...]


Node = Union[Condition, Group]


def _fail(message: str) -> NoReturn:
    raise BadRequest("Cannot parse entities filter", message)


class _Parser:
    def __init__(self, meta: "MetaClass", permissions: "Permissions | None",
                 session: dict[str, str] | None) -> None:
        self.meta = meta
        self.permissions = permissions      # None: no visibility check (row-level roles)
        self.session = session or {}
        self.count = 0

    def root(self, spec: Any) -> Group:
        if spec is None:
            _fail("Entities filter cannot be null")
        if not isinstance(spec, dict):
            raise BadRequest("Malformed request JSON data structure",
                             "The filter must be a JSON object")
        return Group(False, self.items(spec.get("conditions", ()), 0))

    def items(self, conditions: Any, depth: int) -> tuple[Node, ...]:
        if not isinstance(conditions, (list, tuple)):
            raise BadRequest("Malformed request JSON data structure",
                             "Field 'conditions' must be a JSON array")
        if depth > MAX_DEPTH:
            _fail(f"Conditions are nested deeper than {MAX_DEPTH} levels")
        parsed: list[Node] = []
        for item in conditions:
            if not isinstance(item, dict):
                raise BadRequest("Malformed request JSON data structure",
                                 f"JSON array element {_show(item)} is not a valid JSON object literal")
            self.count += 1
            if self.count > MAX_CONDITIONS:
                _fail(f"A filter may have at most {MAX_CONDITIONS} conditions")
            parsed.append(self.group(item, depth) if "group" in item else self.condition(item))
        return tuple(parsed)

    def group(self, item: dict[str, Any], depth: int) -> Group:
        kind = item.get("group")
        if not isinstance(kind, str) or kind.upper() not in ("AND", "OR"):
            _fail(f"Invalid conditions group type: {_show(kind)}")
        if "conditions" not in item:
            _fail("Field 'conditions' is not defined for conditions group")
        return Group(kind.upper() == "OR", self.items(item.get("conditions"), depth + 1))

    def condition(self, item: dict[str, Any]) -> Condition:
        prop_name, operator = item.get("property"), item.get("operator")
        if not isinstance(prop_name, str) or not prop_name:
            _fail("Field 'property' is not defined for filter condition")
        if not isinstance(operator, str) or not operator:
            _fail("Field 'operator' is not defined for filter condition")
        if operator not in _ALL:
            _fail(f"Operator is not supported: {_show(operator)}")
        path = self.path(prop_name)
        prop = path[-1]
        kind = value_kind(prop)
        if operator not in OPERATORS_BY_KIND[kind]:
            _fail(f"Operator {operator} is not available for type {prop.type_name}")
        if operator in ("isNull", "notEmpty"):
            return Condition(path, operator, self.flag(item.get("value", True)))
        if "value" not in item:
            _fail("Field 'value' is not defined for filter condition")
        value = item["value"]
        if operator in ("in", "notIn"):
            if not isinstance(value, list):
                _fail(f"JSON array was expected as a value for condition with operator {operator}")
            if len(value) > MAX_IN_VALUES:
                _fail(f"At most {MAX_IN_VALUES} values are allowed for operator {operator}")
            return Condition(path, operator, tuple(self.value(prop, v) for v in value))
        return Condition(path, operator, self.value(prop, value))

    def path(self, dotted: str) -> tuple["MetaProperty", ...]:
        meta: MetaClass | None = self.meta
        chain: list[MetaProperty] = []
        owner: tuple[str, str] | None = None
        names = dotted.split(".")
        for position, name in enumerate(names):
            prop = meta.property(name) if meta is not None else None
            # A collection (composition or many-to-many) may be crossed, not
            # compared: "lines.product.name" means some line's product's name.
            crossed = prop is not None and prop.is_collection and position < len(names) - 1
            # An embedded value is reached into ("address.city"), not compared;
            # its attributes are visible as the owner's permissions on
            # "address.city" say.
            inner = prop is not None and prop.is_embedded and position < len(names) - 1
            visible = meta is not None and prop is not None and prop.persistent and (
                not (prop.is_collection or prop.is_embedded) or crossed or inner) and (
                self.permissions is None or attribute_visible(self.permissions, meta, name, owner))
            if not visible or meta is None or prop is None:
                _fail(f"Property for {self.meta.name} not found: {dotted}")
            chain.append(prop)
            owner = (meta.name, name) if inner else None
            meta = prop.target if position < len(names) - 1 else None
            if position < len(names) - 1 and not (prop.is_reference or prop.is_embedded):
                _fail(f"Property for {self.meta.name} not found: {dotted}")
        return tuple(chain)

    @staticmethod
    def flag(value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return bool(value == "true")
        _fail(f"Cannot parse property value: {_show(value)}")

    def value(self, prop: "MetaProperty", value: Any) -> Any:
        if isinstance(value, str):
            if len(value) > MAX_VALUE_LENGTH:
                _fail(f"Value is longer than {MAX_VALUE_LENGTH} characters")
            if value.startswith(":session$") and value[9:] in self.session:
                value = self.session[value[9:]]
        try:
            if value is None or isinstance(value, list) or (
                    isinstance(value, dict) and not prop.is_reference):
                raise ValueError("not a single value")
            parsed = prop.value_type.from_json(value)
        except NumberOutOfBounds as exc:
            _fail(f"Cannot parse property value: {exc}")
        except (ValueError, TypeError, ArithmeticError):
            if prop.meta_enum is not None:
                _fail(f"Cannot parse enum value: {_show(value)}")
            _fail(f"Cannot parse property value: {_show(value)}")
        places = getattr(prop.field, "decimal_places", None)
        if places is not None and not decimal_fits(parsed, prop.field.max_digits, places,
                                                   check_scale=False):
            _fail(f"Value {_show(value)} is out of the range of {prop.owner.name}.{prop.name}")
        return parsed


def value_kind(prop: "MetaProperty") -> str:
    if prop.is_reference:
        return "reference"
    if prop.meta_enum is not None:
        return "enum"
    return prop.datatype.kind if prop.datatype is not None else "json"


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value) if not isinstance(value, dict) else "{...}"
    if value is None:
        text = "null"
    return text if len(text) <= 100 else text[:100] + "..."


def parse_filter(meta: "MetaClass", spec: Any, permissions: "Permissions | None" = None,
                 session: dict[str, str] | None = None) -> Group:
    """Validate a filter; ``permissions`` limits it to attributes the caller sees."""
    return _Parser(meta, permissions, session).root(spec)


def parse_path(meta: "MetaClass", dotted: str, permissions: "Permissions | None" = None,
               session: dict[str, str] | None = None) -> tuple["MetaProperty", ...]:
    """A dotted attribute path as a filter condition resolves it (to-one
    references, embedded values and collections crossed; 400 for what the
    caller cannot see)."""
    return _Parser(meta, permissions, session).path(dotted)


def attribute_visible(permissions: "Permissions", meta: "MetaClass", name: str,
                      owner: tuple[str, str] | None = None) -> bool:
    """Whether the caller may read ``meta.name`` (an attribute of an entity it
    may read, or of an embedded value: ``owner`` is then the owning entity's
    name and the embedded attribute's, and ``address.city`` is asked).

    The one rule every way of reading by an attribute asks (filters, sort,
    cursors, aggregates): what the Entities API leaves out of an answer
    cannot be compared, ordered or grouped either. A reference to (or a
    collection of) an entity the caller may not read is left out of answers,
    so it is not visible here either, whatever the attribute's own level."""
    prop = meta.property(name)
    target = None if prop is None or prop.is_embedded else prop.target
    if target is not None and not permissions.can(target.name, "read"):
        return False
    if owner is not None:
        return permissions.attribute(owner[0], f"{owner[1]}.{name}") > 0
    return permissions.can(meta.name, "read") and permissions.attribute(meta.name, name) > 0


def compares_values(prop: "MetaProperty") -> bool:
    """Whether SQL may order, group or count distinct ``prop``'s stored values.
    Not a JSON value: its stored text may hold values the caller may not see
    (``HistoryItem.changes`` holds other entities' attribute values, masked
    only as rows are read), and a filter compares it for presence only
    (``isNull``, ``notEmpty``)."""
    return value_kind(prop) != "json"
