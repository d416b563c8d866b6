"""Entity schemas from the metadata, three per entity:

- ``entity_<name>``: the entity as the API writes it. Only ``_entityName`` and
  ``id`` are always there: fetch plans choose the rest, hidden attributes are
  left out, and nulls appear only with ``returnNulls``.
- ``entityInput_<name>``: what a create or update body may set (read-only,
  transient and system attributes are ignored by the API and not listed);
  references by id, compositions as arrays of their children, embedded
  values as objects of their attributes.
- ``entityNew_<name>``: a create body: the input with the mandatory attributes.
- ``entityRef_<name>``: a reference to one in a body, ``{"id": ...}``.
- ``embedded_<Type>`` / ``embeddedInput_<Type>``: an embedded value type,
  written and given.

An enum is one named schema, ``enum_<name>``, wherever it is used (nullable
as ``anyOf`` with null), so a generated client has one type per enum and per
reference target.

Written for the entities and attributes one caller may see: ``properties(meta)``
gives the readable properties of an entity, ``modifiable(prop)`` whether the
caller may set one (input schemas list only those).
"""
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal

from ..jsonio import JsonObject
from ..model.metadata import MetaClass, MetaProperty
from .schemas import (array, datatype_schema, enum_schema, enum_schema_name, id_schema, nullable,
                      ref,
                      reference_schema, reference_schema_name)

SYSTEM = ("id", "version")
# The properties of an entity (or value type) the caller may read; whether it may set one.
Readable = Callable[[MetaClass], Sequence[MetaProperty]]
Modifiable = Callable[[MetaProperty], bool]


def entity_schemas(entities: Sequence[MetaClass], properties: Readable,
                   modifiable: Modifiable) -> dict[str, JsonObject]:
    writable = {meta.name: [prop for prop in _writable(properties(meta)) if modifiable(prop)]
                for meta in entities}
    schemas: dict[str, JsonObject] = {}
    for meta in entities:
        schemas[f"entity_{meta.name}"] = _written(meta, properties(meta))
        schemas[f"entityInput_{meta.name}"] = _input(meta, writable)
        schemas[f"entityNew_{meta.name}"] = _new(meta, writable[meta.name])
        schemas[reference_schema_name(meta.name)] = _reference(meta)
        for prop in properties(meta):
            if prop.meta_enum is not None:
                schemas[enum_schema_name(prop.meta_enum.name)] = enum_schema(prop.meta_enum)
            elif prop.is_embedded:
                schemas.update(_value_type_schemas(prop.related, properties, modifiable))
                for part in properties(prop.related):
                    if part.meta_enum is not None:
                        schemas[enum_schema_name(part.meta_enum.name)] = enum_schema(part.meta_enum)
    return schemas


def stub_schemas(meta: MetaClass) -> dict[str, JsonObject]:
    """The schemas of an entity the caller may not read: an entity with an id."""
    return {f"entity_{meta.name}": _written(meta, [meta.properties["id"]]),
            f"entityInput_{meta.name}": _input(meta, {}),
            f"entityNew_{meta.name}": _new(meta, []),
            reference_schema_name(meta.name): _reference(meta)}


def _reference(meta: MetaClass) -> JsonObject:
    return reference_schema(meta.name, id_schema(meta))


def _value_schema(prop: MetaProperty) -> JsonObject:
    if prop.meta_enum is not None:
        return ref(enum_schema_name(prop.meta_enum.name))
    datatype = prop.value_datatype
    schema = datatype_schema(datatype.name)
    # The Peewee field's bounds, where its kind has them (CharField, DecimalField).
    max_length: int | None = getattr(prop.field, "max_length", None)
    max_digits: int | None = getattr(prop.field, "max_digits", None)
    if datatype.name == "string" and max_length:
        schema["maxLength"] = max_length
    elif datatype.name == "decimal" and max_digits:
        decimal_places: int | None = getattr(prop.field, "decimal_places", None)
        bound = Decimal(10) ** (max_digits - (decimal_places or 0))
        schema.update(exclusiveMinimum=-int(bound), exclusiveMaximum=int(bound))
        if decimal_places is not None:
            schema["description"] = f"Written with {decimal_places} decimal places"
    return schema


def _written(meta: MetaClass, shown: Iterable[MetaProperty]) -> JsonObject:
    parts = ", ".join(meta.instance_name) or "the entity name and id"
    properties: JsonObject = {
        "_entityName": {"type": "string", "const": meta.name, "readOnly": True},
        "_instanceName": {"type": ["string", "null"], "readOnly": True,
                          "description": f"Built from: {parts}"},
    }
    for prop in shown:
        if prop.is_collection:
            schema = array(ref(f"entity_{prop.related.name}"))
        elif prop.is_reference:
            schema = nullable(ref(f"entity_{prop.related.name}"))
        elif prop.is_embedded:
            schema = _embedded(prop, written=True)
        elif prop.name == "id":
            schema = id_schema(meta)
        else:
            schema = _value_schema(prop)
            # Every answer has the id; the other attributes may be null.
            if prop.name != "id" and (not prop.mandatory or not prop.persistent
                                      or prop.name == "version"):
                schema = nullable(schema)
        if prop.read_only or not prop.persistent:
            schema = {**schema, "readOnly": True}
        properties[prop.name] = schema
    return {"type": "object", "title": meta.name, "properties": properties,
            "required": ["_entityName", "id"]}


def _writable(properties: Iterable[MetaProperty]) -> list[MetaProperty]:
    return [prop for prop in properties
            if prop.persistent and not prop.read_only and prop.name not in SYSTEM]


def _input(meta: MetaClass, writable: Mapping[str, Sequence[MetaProperty]]) -> JsonObject:
    """``writable``: entity name -> the properties the caller may set."""
    given = {**id_schema(meta), "description": "Given on create: the new entity's id (an "
                                               "existing id updates that entity)"}
    # null is no id: a new entity whose id the service or the database gives
    # (an application's own string key has no such default).
    properties: JsonObject = {"id": given if meta.id_kind == "string" else nullable(given),
                  "version": {"type": "integer", "description": "With optimistic locking: "
                                                                "the version the update is based on"}}
    for prop in writable.get(meta.name, ()):
        if prop.link is not None:
            schema = array(ref(reference_schema_name(prop.related.name)))
            schema["description"] = f"Exactly these {prop.related.name} members, by id"
        elif prop.is_collection:
            schema = array(_child(prop, writable.get(prop.related.name, ())))
        elif prop.is_reference:
            schema = _by_id(prop)
        elif prop.is_embedded:
            schema = _embedded(prop, written=False)
        else:
            schema = _value_schema(prop)
            if not prop.mandatory:
                schema = nullable(schema)
        properties[prop.name] = schema
    return {"type": "object", "title": f"{meta.name} (input)", "properties": properties}


def _by_id(prop: MetaProperty) -> JsonObject:
    schema = ref(reference_schema_name(prop.related.name))
    return schema if prop.mandatory else nullable(schema)


def _embedded(prop: MetaProperty, written: bool) -> JsonObject:
    """An embedded value: its value type's named schema, or null."""
    kind = "embedded" if written else "embeddedInput"
    return nullable(ref(f"{kind}_{prop.related.name}"))


def _value_type_schemas(value_type: MetaClass, properties: Readable,
                        modifiable: Modifiable) -> dict[str, JsonObject]:
    """``embedded_<Type>`` (as written) and ``embeddedInput_<Type>``: a plain
    object of the value type's attributes (no _entityName, no id), one named
    schema each, shared by every entity that embeds the type: the attributes
    the caller may read (set) where it embeds the type."""
    written: JsonObject = {}
    given: JsonObject = {}
    for part in properties(value_type):
        if part.is_reference:
            written[part.name] = nullable(ref(f"entity_{part.related.name}"))
            if modifiable(part):
                given[part.name] = _by_id(part)
        else:
            written[part.name] = nullable(_value_schema(part))
            if modifiable(part):
                given[part.name] = written[part.name]
    return {f"embedded_{value_type.name}": {"type": "object", "title": value_type.name,
                                            "properties": written},
            f"embeddedInput_{value_type.name}": {"type": "object",
                                                 "title": f"{value_type.name} (input)",
                                                 "properties": given}}


def _mandatory(meta: MetaClass, writable: Iterable[MetaProperty],
               skip: object = None) -> list[str]:
    own_key = ["id"] if meta.id_kind == "string" else []     # the application assigns it
    return own_key + [prop.name for prop in writable if prop.mandatory and prop.field is not skip]


def _new(meta: MetaClass, writable: Iterable[MetaProperty]) -> JsonObject:
    schema: JsonObject = {"allOf": [ref(f"entityInput_{meta.name}")]}
    required = _mandatory(meta, writable)
    if required:
        schema["required"] = required
    return schema


def _child(prop: MetaProperty, child_writable: Iterable[MetaProperty]) -> JsonObject:
    """A composition's child: a new one (its owner is set by the parent, not in
    the body), or a stored one by its id with the attributes to change."""
    child_input = ref(f"entityInput_{prop.related.name}")
    new: JsonObject = {"allOf": [child_input]}
    required = _mandatory(prop.related, child_writable, skip=prop.back_field)
    if required:
        new["required"] = required
    return {"anyOf": [new, {"allOf": [child_input], "required": ["id"]}]}
