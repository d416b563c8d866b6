"""Service method parameters from Python type hints, and how request values bind to them.

Kinds of parameter (``Param.kind``):

- ``value``: a datatype (str, int, float, Decimal, bool, UUID, date, datetime,
  time, FileRef) or an application enum -- ``model.valuetypes`` parses it from
  JSON or text, exactly as entity attributes are parsed;
- ``array``: ``list[<value type>]``, a JSON array (GET: a JSON array or the
  parameter repeated);
- ``entity`` / ``entities``: an entity model or ``list[<model>]``, entity JSON
  as the Entities API accepts it, validated like a save before the call;
- ``object``: a dataclass (a transfer object), a JSON object whose fields
  are typed by the dataclass's hints (nested dataclasses, lists, Optional);
- ``caller`` / ``data``: injected from the request, never a request parameter.

``Optional[...]`` or a default value makes a parameter optional.
``Param.json_schema()`` describes the JSON value a client sends.
"""
import dataclasses
import types
import typing

from ..data.bound import DataAccess, Record
from ..data.read.queries import invalid_parameter
from ..errors import MUST_NOT_BE_NULL, Text, ValidationFailed, invalid_value
from ..jsonio import JsonObject, JsonValue, loads
from ..model.entity import Entity
from ..model.metadata import MetaClass, Metadata
from ..model.valuetypes import MAX_ARRAY_ITEMS, ArrayType, ValueType, python_value_type
from .declare import Caller

INVALID = "{restsvc.validation.InvalidValue}"
NOT_NULL = "{jakarta.validation.constraints.NotNull.message}"

# A type hint as ``typing.get_type_hints`` gives it: a class, a generic alias, a union...
Hint = object


def optional_of(hint: Hint) -> Hint | None:
    """``Optional[X]`` -> X; None when the hint is not optional."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args: list[Hint] = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(args) == 1 and len(typing.get_args(hint)) == 2:
            return args[0]
    return None


def list_item(hint: Hint) -> Hint | None:
    if typing.get_origin(hint) in (list, tuple) and len(typing.get_args(hint)) >= 1:
        item: Hint = typing.get_args(hint)[0]
        return item
    return None


class ObjectType:
    """A dataclass bound from a JSON object; violations name their paths."""

    def __init__(self, metadata: Metadata, cls: type) -> None:
        self.cls = cls
        self.name = f"{cls.__module__}.{cls.__qualname__}"
        self.sample = None
        hints = typing.get_type_hints(cls)
        self.fields: list[tuple[str, ValueType | ObjectType, bool]] = []
        for item in dataclasses.fields(cls):
            hint = hints[item.name]
            inner = optional_of(hint)
            required = inner is None and item.default is dataclasses.MISSING \
                and item.default_factory is dataclasses.MISSING
            self.fields.append((item.name, field_type(metadata, inner or hint), required))

    def from_json(self, raw: JsonValue, path: str = "") -> object:
        if not isinstance(raw, dict):
            raise ValidationFailed([_violation(path.rstrip("."), Text("jsonObject", "must be a JSON object"),
                                               INVALID)])
        values: dict[str, object] = {}
        violations: list[JsonObject] = []
        for name, kind, required in self.fields:
            where = f"{path}{name}"
            value = raw.get(name)
            if value is None:
                if required:
                    violations.append(_violation(where, MUST_NOT_BE_NULL, NOT_NULL))
                continue
            try:
                values[name] = (kind.from_json(value, where + ".") if isinstance(kind, ObjectType)
                                else kind.from_json(value))
            except ValidationFailed as exc:
                violations.extend(exc.violations)
            except (ValueError, TypeError, ArithmeticError) as exc:
                violations.append(_violation(where, invalid_value(kind.name, exc), INVALID,
                                             value))
        if violations:
            raise ValidationFailed(violations)
        return self.cls(**values)

    def from_text(self, text: object) -> object:
        raise ValueError("an object has no text form")

    def to_json(self, value: object) -> JsonValue:
        return dataclasses.asdict(value)    # type: ignore[call-overload]  # an instance of cls

    def to_text(self, value: object) -> str:
        raise TypeError("an object has no text form")

    def json_schema(self) -> JsonObject:
        return {"type": "object",
                # An optional field may be null: the same as leaving it out.
                "properties": {name: kind.json_schema() if required
                               else _or_null(kind.json_schema())
                               for name, kind, required in self.fields},
                "required": [name for name, _, required in self.fields if required]}


def _or_null(schema: JsonObject) -> JsonObject:
    return {"anyOf": [schema, {"type": "null"}]}


def field_type(metadata: Metadata, hint: Hint) -> ValueType | ObjectType:
    """The type of a dataclass field: simple, list of simple, or another dataclass."""
    found: ValueType | None = python_value_type(metadata, hint)
    if found is not None:
        return found
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return ObjectType(metadata, hint)
    item = list_item(hint)
    if item is not None:
        inner = python_value_type(metadata, item)
        if inner is not None:
            array: ValueType = ArrayType(inner)
            return array
        if dataclasses.is_dataclass(item) and isinstance(item, type):
            return ArrayType(ObjectType(metadata, item))
    raise TypeError(f"type {hint!r} is not supported here")


def _violation(path: str, message: Text | str, template: str,
               value: JsonValue = None) -> JsonObject:
    if not isinstance(value, (str, int, float, bool)):
        value = None
    return {"message": message, "messageTemplate": template, "path": path, "invalidValue": value}


@dataclasses.dataclass
class Param:
    name: str
    kind: str                  # value, array, entity, entities, object, caller, data
    type_name: str             # as descriptors show it
    required: bool
    default: object = None
    value_type: ValueType | ObjectType | None = None  # value, array: ValueType; object: ObjectType
    meta: MetaClass | None = None                     # entity, entities

    @property
    def is_injected(self) -> bool:
        return self.kind in ("caller", "data")

    def descriptor(self) -> JsonObject:
        return {"name": self.name, "type": self.type_name, "required": self.required}

    def json_schema(self) -> JsonObject:
        if self.kind in ("entity", "entities"):
            assert self.meta is not None
            item = {"type": "object", "description": f"{self.meta.name} entity JSON"}
            return item if self.kind == "entity" else {"type": "array", "items": item,
                                                       "maxItems": MAX_ARRAY_ITEMS}
        assert self.value_type is not None
        return self.value_type.json_schema()

    def bind(self, raw: JsonValue, data: DataAccess, is_text: bool) -> object:
        """One request value -> the argument; 400 for a bad one (``raw``: the
        texts of a query parameter when ``is_text``, else the JSON value)."""
        value_type = self.value_type
        if is_text:
            if self.kind == "value":
                assert value_type is not None and not isinstance(value_type, ObjectType)
                return self._parse(value_type.from_text, raw[0])
            if self.kind == "array" and not (len(raw) == 1 and raw[0].lstrip().startswith("[")):
                assert value_type is not None and not isinstance(value_type, ObjectType)
                return self._parse(value_type.from_text, raw)
            try:
                raw = loads(raw[0])
            except (ValueError, RecursionError):
                raise invalid_parameter(self.name) from None
        if self.kind in ("value", "array"):
            assert value_type is not None and not isinstance(value_type, ObjectType)
            return self._parse(value_type.from_json, raw)
        if self.kind == "object":
            assert isinstance(value_type, ObjectType)
            return value_type.from_json(raw, f"{self.name}.")
        if self.kind == "entity":
            return self._entity(raw, data, f"{self.name}.")
        if not isinstance(raw, list) or len(raw) > MAX_ARRAY_ITEMS:
            raise invalid_parameter(self.name)
        return [self._entity(item, data, f"{self.name}[{index}].") for index, item in enumerate(raw)]

    def _parse(self, parse: typing.Callable[[JsonValue], object], raw: JsonValue) -> object:
        try:
            return parse(raw)
        except (ValueError, TypeError, ArithmeticError):
            raise invalid_parameter(self.name) from None

    def _entity(self, raw: JsonValue, data: DataAccess, path: str) -> Record:
        if not isinstance(raw, dict):
            raise invalid_parameter(self.name)
        assert self.meta is not None
        data.validate(self.meta, raw, path)
        return Record(self.meta, None, raw)


def make_param(metadata: Metadata, name: str, hint: Hint, default: object = None,
               has_default: bool = False) -> Param:
    """A Param for a method parameter's hint; TypeError says what is not supported."""
    if hint is Caller:
        return Param(name, "caller", "", False)
    if hint is DataAccess:
        return Param(name, "data", "", False)
    inner = optional_of(hint)
    required = inner is None and not has_default
    hint = inner or hint
    simple: ValueType | None = python_value_type(metadata, hint)
    if simple is not None:
        return Param(name, "value", simple.name, required, default, simple)
    if _is_entity(hint):
        meta = _entity_meta(metadata, hint)
        return Param(name, "entity", meta.name, required, default, meta=meta)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        object_type = ObjectType(metadata, hint)
        return Param(name, "object", object_type.name, required, default, object_type)
    item = list_item(hint)
    if item is not None and _is_entity(item):
        meta = _entity_meta(metadata, item)
        return Param(name, "entities", f"{meta.name}[]", required, default, meta=meta)
    if item is not None and python_value_type(metadata, item) is not None:
        array = ArrayType(_value_type(metadata, item))
        return Param(name, "array", array.name, required, default, array)
    raise TypeError(f"parameter {name}: type {hint!r} is not supported")


def _value_type(metadata: Metadata, hint: Hint) -> ValueType:
    found = python_value_type(metadata, hint)
    if found is None:
        raise TypeError(f"type {hint!r} is not supported here")
    return found


def result_schema(metadata: Metadata, hint: Hint) -> tuple[str, JsonObject | None]:
    """What a return hint answers: ``("empty", None)``, ``("text", schema)`` for
    simple values (text/plain), ``("json", schema)``; ``("json", {})`` when the
    hint says nothing more (no hint, dict, a list of anything)."""
    if hint is None or hint is type(None):
        return "empty", None
    hint = optional_of(hint) or hint
    simple: ValueType | None = python_value_type(metadata, hint)
    if simple is not None:
        return "text", simple.json_schema()
    item = list_item(hint)
    if item is not None and python_value_type(metadata, item) is not None:
        return "json", ArrayType(_value_type(metadata, item)).json_schema()
    model = item if item is not None else hint     # a list's hint is no class, so no entity
    if _is_entity(model):
        meta = _entity_meta(metadata, model)
        entity = {"type": "object", "description": f"{meta.name} entity JSON"}
        return "json", entity if item is None else {"type": "array", "items": entity}
    try:
        return "json", field_type(metadata, hint).json_schema()
    except TypeError:
        return "json", {}      # a dict, or a list of anything: JSON all the same


def _is_entity(hint: Hint) -> typing.TypeGuard[type[Entity]]:
    return isinstance(hint, type) and issubclass(hint, Entity)


def _entity_meta(metadata: Metadata, model: type[Entity]) -> MetaClass:
    meta: MetaClass | None = metadata.of_model(model)
    if meta is None:
        raise TypeError(f"{model.__name__} is not an entity of the application")
    return meta
