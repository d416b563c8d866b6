"""Typed values: what a parameter, a filter value or an attribute value may be.

A ``ValueType`` is a datatype (``datatypes.py`` holds their JSON and text
forms and schemas), an enum (values are constant names), an entity referred
to by id, or an array of one of these. Every place that turns request input
into typed values uses these: entity attributes (importer), search filters,
predefined query parameters and service parameters.

    value_type(metadata, "localDate")            # by restsvc datatype name
    value_type(metadata, "java.util.UUID[]")     # the reference's Java names work too
    value_type(metadata, "restsvc.demo.model.OrderStatus")
    value_type(metadata, "Customer")             # an entity: its id
    python_value_type(metadata, datetime.date)   # from a Python type hint

Each has ``from_json(raw)`` / ``from_text(text)`` (raise ValueError or
TypeError), ``to_json(value)`` / ``to_text(value)``, ``json_schema()`` and
``name`` (how descriptors show it).
"""
import datetime
import decimal
import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .datatypes import DATATYPES, Datatype, FileRef, split_file_ref


MAX_ARRAY_ITEMS = 1_000


class ValueType(Protocol):
    """How one kind of value is parsed and written, as JSON and as text."""

    name: str
    sample: Any         # a valid raw value: configurations are checked with it

    def from_json(self, raw: Any, /) -> Any: ...

    def from_text(self, text: Any, /) -> Any: ...     # an array's: a list of texts

    def to_json(self, value: Any, /) -> Any: ...

    def to_text(self, value: Any, /) -> str: ...

    def json_schema(self) -> dict[str, Any]: ...

# The reference's Java parameter types, so its configuration files port as they are.
JAVA_TYPES = {
    "java.lang.String": "string",
    "java.lang.Integer": "int", "int": "int", "java.lang.Short": "int", "short": "int",
    "java.lang.Byte": "int", "byte": "int",
    "java.lang.Long": "long", "long": "long",
    "java.math.BigDecimal": "decimal",
    "java.lang.Double": "double", "double": "double", "java.lang.Float": "double", "float": "double",
    "java.lang.Boolean": "boolean", "boolean": "boolean",
    "java.util.UUID": "uuid",
    "java.time.LocalDate": "localDate", "java.sql.Date": "localDate",
    "java.time.LocalDateTime": "localDateTime",
    "java.time.OffsetDateTime": "dateTime", "java.util.Date": "dateTime",
    "java.time.LocalTime": "localTime", "java.time.OffsetTime": "localTime", "java.sql.Time": "localTime",
}

# Python type hints -> datatype names (services).
PYTHON_TYPES = {
    str: "string", int: "long", float: "double", decimal.Decimal: "decimal", bool: "boolean",
    uuid.UUID: "uuid", datetime.date: "localDate", datetime.datetime: "localDateTime",
    datetime.time: "localTime",
}

# A valid raw value of each datatype: configurations are checked with these.
SAMPLES = {"string": "x", "int": "0", "long": "0", "decimal": "0", "double": "0",
           "boolean": "true", "uuid": str(uuid.UUID(int=0)), "localDate": "2000-01-01",
           "localDateTime": "2000-01-01T00:00:00", "dateTime": "2000-01-01T00:00:00",
           "localTime": "00:00:00", "fileRef": "fs://sample?name=sample"}


def enum_name(enum_class: type) -> str:
    """Fully qualified name: the Python module path plus the class name."""
    return f"{enum_class.__module__}.{enum_class.__qualname__}"


@dataclass(eq=False)
class MetaEnum:
    name: str
    enum_class: type[enum.Enum]
    # The members by constant name (an enum's do not change; ``__members__``
    # makes a new view at every call).
    members: dict[str, enum.Enum] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.members = dict(self.enum_class.__members__)

    def member(self, constant: object) -> Any:
        """The member for a constant name, or None."""
        return self.members.get(constant) if isinstance(constant, str) else None

    def to_json(self, captions: Callable[[str], str]) -> dict[str, Any]:
        return {"name": self.name, "values": [
            {"name": m.name, "id": str(m.value), "caption": captions(f"{self.name}.{m.name}")}
            for m in self.enum_class]}


# What value types read of the metadata (meta.py's MetaClass and MetaProperty,
# metadata.py's Metadata), named here so that this module imports neither:
# the metadata is made of value types.
class Entity(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def properties(self) -> Mapping[str, "Attribute"]: ...


class Attribute(Protocol):
    @property
    def is_reference(self) -> bool: ...

    @property
    def meta_enum(self) -> MetaEnum | None: ...

    @property
    def related(self) -> Entity: ...

    @property
    def value_datatype(self) -> Datatype: ...


class Names(Protocol):
    @property
    def enums(self) -> Mapping[str, MetaEnum]: ...

    def entity(self, name: str) -> Entity | None: ...


class ScalarType:
    def __init__(self, datatype: Datatype, name: str | None = None) -> None:
        self.datatype = datatype
        self.name = name or datatype.name
        self.sample: Any = SAMPLES[datatype.name]

    def from_json(self, raw: Any) -> Any:
        return self.datatype.from_json(raw)

    def from_text(self, text: Any) -> Any:
        return self.datatype.from_text(text)

    def to_json(self, value: Any) -> Any:
        return self.datatype.to_json(value)

    def to_text(self, value: Any) -> str:
        return self.datatype.to_text(value)

    def json_schema(self) -> dict[str, Any]:
        return dict(self.datatype.json_schema)


class FileRefType(ScalarType):
    """File references bound to ``FileRef`` objects (service parameters)."""

    def __init__(self) -> None:
        super().__init__(DATATYPES["fileRef"])

    def from_json(self, raw: Any) -> FileRef:
        return split_file_ref(raw)

    def from_text(self, text: Any) -> FileRef:
        return self.from_json(text)

    def to_json(self, value: Any) -> str:
        return str(value)

    def to_text(self, value: Any) -> str:
        return str(value)


class EnumType:
    def __init__(self, meta_enum: MetaEnum) -> None:
        self.meta_enum = meta_enum
        self.name = meta_enum.name
        self.sample: Any = next(iter(meta_enum.enum_class)).name

    def from_json(self, raw: Any) -> Any:
        if isinstance(raw, self.meta_enum.enum_class):
            return raw
        member = self.meta_enum.member(raw)
        if member is None:
            raise ValueError("not a constant of the enum")
        return member

    def from_text(self, text: Any) -> Any:
        return self.from_json(text)

    def to_json(self, member: Any) -> str:
        return str(member.name)

    def to_text(self, member: Any) -> str:
        return str(member.name)

    def json_schema(self) -> dict[str, Any]:
        # The title names the enum's one schema in an OpenAPI document (enum_<title>).
        return {"type": "string", "title": self.meta_enum.name,
                "enum": [m.name for m in self.meta_enum.enum_class]}


class EntityIdType:
    """An entity given by its id, or by an object ``{"id": ...}`` in JSON."""

    def __init__(self, meta: Entity, name: str | None = None) -> None:
        self.meta = meta
        self.id_type = ScalarType(meta.properties["id"].value_datatype)
        self.name = name or meta.name
        self.sample: Any = self.id_type.sample

    def from_json(self, raw: Any) -> Any:
        return self.id_type.from_json(raw.get("id") if isinstance(raw, dict) else raw)

    def from_text(self, text: Any) -> Any:
        return self.id_type.from_text(text)

    def to_json(self, value: Any) -> Any:
        return self.id_type.to_json(value)

    def to_text(self, value: Any) -> str:
        return self.id_type.to_text(value)

    def json_schema(self) -> dict[str, Any]:
        return self.id_type.json_schema()


class ArrayType:
    def __init__(self, item: "ValueType", name: str | None = None) -> None:
        self.item = item
        self.name = name or f"{item.name}[]"
        self.sample: Any = [item.sample]

    def from_json(self, raw: Any) -> list[Any]:
        if not isinstance(raw, list) or len(raw) > MAX_ARRAY_ITEMS:
            raise ValueError(f"expected an array of at most {MAX_ARRAY_ITEMS} values")
        return [self.item.from_json(value) for value in raw]

    def from_text(self, texts: Any) -> list[Any]:
        """A list of texts (a repeated query parameter)."""
        if not isinstance(texts, list) or len(texts) > MAX_ARRAY_ITEMS:
            raise ValueError(f"expected at most {MAX_ARRAY_ITEMS} values")
        return [self.item.from_text(text) for text in texts]

    def to_json(self, values: Any) -> list[Any]:
        return [self.item.to_json(value) for value in values]

    def to_text(self, values: Any) -> str:
        return ",".join(self.item.to_text(value) for value in values)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema(), "maxItems": MAX_ARRAY_ITEMS}


def value_type(metadata: Names, declared: str, entities: bool = True) -> ValueType | None:
    """The ValueType for a declared type name, or None when the name is unknown.
    ``entities=False`` leaves entity names unresolved (their value is not an id)."""
    if declared.endswith("[]"):
        item = value_type(metadata, declared[:-2], entities)
        return ArrayType(item, declared) if item is not None else None
    base = JAVA_TYPES.get(declared, declared)
    if base in DATATYPES:
        return ScalarType(DATATYPES[base], declared)
    if base in metadata.enums:
        return EnumType(metadata.enums[base])
    meta = metadata.entity(base) if entities else None
    return EntityIdType(meta, declared) if meta is not None else None


def python_value_type(metadata: Names, hint: Any) -> ValueType | None:
    """The ValueType of a simple Python type hint (a datatype's class, FileRef
    or an enum), or None for anything else."""
    if hint is FileRef:
        return FileRefType()
    if hint in PYTHON_TYPES:
        return ScalarType(DATATYPES[PYTHON_TYPES[hint]])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        name = enum_name(hint)
        return EnumType(metadata.enums.get(name) or MetaEnum(name, hint))
    return None


def property_value_type(prop: Attribute) -> ValueType:
    """How values of an attribute are parsed: its datatype, its enum, or the
    id of the entity it refers to."""
    if prop.is_reference:
        return EntityIdType(prop.related)
    if prop.meta_enum is not None:
        return EnumType(prop.meta_enum)
    return ScalarType(prop.value_datatype)
