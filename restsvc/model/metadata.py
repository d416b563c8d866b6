"""Metadata: MetaClass, MetaProperty and MetaEnum, derived once from the models."""
import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import peewee

from ..db import leading_index_fields
from ..schema.linkkeys import keys_column
from .datatypes import DATATYPES, Datatype, column_json, datatype_of
from .entity import Entity, declaration_of
from .fetchplan import FetchPlan, FetchPlanError, build_built_in_plans, build_named_plans
from .fields import EnumField, transient
from .valuetypes import property_value_type

Captions = Callable[[str], str]


class MetadataError(Exception):
    """A declaration that cannot work; raised at startup."""


def enum_name(enum_class: type) -> str:
    """Fully qualified name: the Python module path plus the class name."""
    return f"{enum_class.__module__}.{enum_class.__qualname__}"


@dataclass(eq=False)
class MetaEnum:
    name: str
    enum_class: Any     # an enum.Enum subclass

    def member(self, constant: object) -> Any:
        """The member for a constant name, or None."""
        return self.enum_class.__members__.get(constant) if isinstance(constant, str) else None

    def to_json(self, captions: Captions) -> dict[str, Any]:
        return {"name": self.name, "values": [
            {"name": m.name, "id": str(m.value), "caption": captions(f"{self.name}.{m.name}")}
            for m in self.enum_class]}


@dataclass(eq=False)
class MetaProperty:
    name: str
    attribute_type: str          # DATATYPE, ENUM, ASSOCIATION, COMPOSITION, EMBEDDED
    type_name: str               # datatype name, enum name or entity name
    cardinality: str             # NONE, MANY_TO_ONE, ONE_TO_MANY, ONE_TO_ONE, MANY_TO_MANY
    mandatory: bool
    read_only: bool
    persistent: bool
    owner: "MetaClass"
    field: Any = None            # the Peewee field (persistent single-valued properties)
    datatype: Datatype | None = None   # for DATATYPE properties
    meta_enum: MetaEnum | None = None   # for ENUM properties
    target: "MetaClass | None" = None   # for references; the value type's for EMBEDDED
    back_field: Any = None       # child's ForeignKeyField for ONE_TO_MANY compositions
    link: "Link | None" = None          # the link table of a MANY_TO_MANY association
    getter: Callable[[Any], Any] | None = None   # transient attributes

    def __post_init__(self) -> None:
        self.json_value = _json_converter(self)

    @functools.cached_property
    def value_type(self) -> Any:
        """How request values of the attribute are parsed (valuetypes.py)."""
        return property_value_type(self)

    @property
    def related(self) -> "MetaClass":
        """What a reference, a collection or an embedded attribute reaches
        (an entity, or the embedded value type)."""
        if self.target is None:
            raise MetadataError(f"{self.owner.name}.{self.name} reaches no entity")
        return self.target

    @property
    def transient(self) -> bool:
        return not self.persistent

    @property
    def is_reference(self) -> bool:
        return self.attribute_type in ("ASSOCIATION", "COMPOSITION")

    @property
    def is_embedded(self) -> bool:
        return self.attribute_type == "EMBEDDED"

    @property
    def is_collection(self) -> bool:
        return self.cardinality in ("ONE_TO_MANY", "MANY_TO_MANY")

    def to_json(self, captions: Captions) -> dict[str, Any]:
        return {
            "name": self.name,
            "attributeType": self.attribute_type,
            "type": self.type_name,
            "cardinality": self.cardinality,
            "mandatory": self.mandatory,
            "readOnly": self.read_only,
            "description": captions(f"{self.owner.name}.{self.name}"),
            "persistent": self.persistent,
            "transient": self.transient,
        }


def _id_kind(meta: "MetaClass", key: peewee.Field) -> str:
    """uuid, integer (an AutoField: the database assigns it) or string (a
    CharField primary key: the application assigns it)."""
    if isinstance(key, peewee.UUIDField):
        return "uuid"
    if isinstance(key, peewee.AutoField):
        return "integer"
    if isinstance(key, peewee.CharField) and not isinstance(key, EnumField):
        return "string"
    raise MetadataError(f"{meta.name}.id: an id is a UUIDField (the default), an AutoField "
                        "or BigAutoField (the database assigns it) or a CharField "
                        "(the application assigns it)")


def _json_converter(prop: MetaProperty) -> Callable[[Any], Any] | None:
    """How a stored value of the property is written to JSON."""
    if prop.meta_enum is not None:
        return lambda member: member.name
    if prop.datatype is None:
        return None
    return column_json(prop.datatype, prop.field)


@dataclass(eq=False)
class Link:
    """The link table of a many-to-many association, seen from one side:
    ``owner_field`` refers to the owning row, ``member_field`` to a member.
    Both sides of a bidirectional association share the table. The side that
    declares the field (not its backref) has ``keys_field``: the owner's
    column of the row's link keys (schema/linkkeys.py), no attribute."""
    through: type[peewee.Model]
    owner_field: peewee.ForeignKeyField
    member_field: peewee.ForeignKeyField
    keys_field: peewee.TextField | None = None


def _keys_field(meta: "MetaClass", name: str,
                m2m: peewee.ManyToManyField) -> peewee.TextField | None:
    column = keys_column(m2m)
    if column is None:
        return None
    if any(field.column_name == column for field in meta.model._meta.sorted_fields):
        raise MetadataError(f"{meta.name}.{name}: the column {column} holds the association's "
                            "link keys; rename the field that uses it")
    field = peewee.TextField(null=True)
    field.bind(meta.model, column, set_attribute=False)     # not one of the model's fields
    return field


def _link(meta: "MetaClass", name: str, m2m: peewee.ManyToManyField) -> Link:
    through = m2m.get_through_model()
    keys = [f for f in through._meta.sorted_fields if isinstance(f, peewee.ForeignKeyField)]
    owner = [f for f in keys if f.rel_model is meta.model]
    member = [f for f in keys if f.rel_model is m2m.rel_model and f is not owner[0]] \
        if len(owner) == 1 else []      # (Field == builds SQL: compared by identity)
    if len(keys) != 2 or len(owner) != 1 or len(member) != 1:
        raise MetadataError(f"{meta.name}.{name}: a many-to-many association needs a link "
                            "table with one foreign key to each side (not the same entity)")
    return Link(through, owner[0], member[0], _keys_field(meta, name, m2m))


@dataclass(eq=False)
class MetaClass:
    name: str
    model: type[Entity]
    ancestor: "MetaClass | None"
    instance_name: tuple[str, ...]
    validators: tuple[Callable[..., Any], ...]
    properties: dict[str, MetaProperty] = field(default_factory=dict)
    fetch_plans: dict[str, FetchPlan] = field(default_factory=dict)   # name -> FetchPlan (built-ins too)
    id_kind: str = "uuid"       # uuid (the default), integer (the database assigns it), string
    links: list[Link] = field(default_factory=list)      # Link of each many-to-many attribute
    is_embedded: bool = False   # an embedded value type (no id): properties only
    audited: bool = False       # audit fields filled by the write path (data/write/writer.py)
    history: tuple[str, ...] | None = None       # recorded attributes' names (data/write/history.py); None: no history
    soft_delete: bool = False   # DELETE marks the row (data/write/softdelete.py)
    events: bool = False        # changes published through the outbox (events/outbox.py)
    natural_key: str | None = None  # the attribute that names a row (data/transfer/imports.py)

    @property
    def database_assigns_id(self) -> bool:
        return self.id_kind == "integer"

    def row_id(self, value: Any) -> str | int:
        """An id in the form loaded rows hold it: UUIDs as canonical text,
        integers as int, strings as they are."""
        return str(value) if self.id_kind != "integer" else int(value)

    def property(self, name: str) -> MetaProperty | None:
        return self.properties.get(name)

    def to_json(self, captions: Captions,
                properties: Iterable[MetaProperty] | None = None) -> dict[str, Any]:
        """The reference's MetaClassInfo, with ``properties`` (default: all) listed."""
        return {
            "entityName": self.name,
            "ancestor": self.ancestor.name if self.ancestor else None,
            "properties": [p.to_json(captions) for p in (
                self.properties.values() if properties is None else properties)],
        }


class Metadata:
    """All entities and enums of the application, by name."""

    def __init__(self, models: Iterable[type[Entity]], extra_enums: Iterable[type] = ()) -> None:
        self.entities: dict[str, MetaClass] = {}
        self.embeddables: dict[str, MetaClass] = {}   # value types of embedded attributes, by name
        self.enums: dict[str, MetaEnum] = {}
        self._by_model: dict[type, MetaClass] = {}
        for model in models:
            declared = declaration_of(model)
            if declared.name in self.entities:
                raise MetadataError(f"entity name {declared.name} is declared twice")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_$]*", declared.name):
                raise MetadataError(f"entity name {declared.name!r} is not a valid name")
            meta = MetaClass(declared.name, model, None, declared.instance_name,
                             declared.validators, audited=declared.audited,
                             history=declared.history, soft_delete=declared.soft_delete,
                             events=declared.events, natural_key=declared.natural_key)
            self.entities[meta.name] = meta
            self._by_model[model] = meta
        for enum_class in extra_enums:
            self._enum(enum_class)
        for meta in self.entities.values():
            self._build(meta, declaration_of(meta.model))
        for meta in list(self._embedded_types()) + list(self.entities.values()):
            build_built_in_plans(meta)
        for meta in self.entities.values():
            try:
                build_named_plans(meta, declaration_of(meta.model).fetch_plans)
            except FetchPlanError as exc:
                raise MetadataError(str(exc)) from None

    def entity(self, name: str) -> MetaClass | None:
        return self.entities.get(name)

    def described(self, name: str) -> MetaClass | None:
        """An entity or an embedded value type, for the metadata API."""
        return self.entities.get(name) or self.embeddables.get(name)

    def _embedded_types(self) -> Iterator[MetaClass]:
        for meta in self.entities.values():
            for prop in meta.properties.values():
                if prop.is_embedded and prop.target is not None:
                    yield prop.target

    def indexed_text_fields(self) -> list[tuple[type[Entity], peewee.Field]]:
        """(model, field) of each indexed string attribute: the columns whose
        lower-cased values get an index of their own for the case-insensitive
        filter operators (``db.lowered_index_sql``)."""
        found: list[tuple[type[Entity], peewee.Field]] = []
        for meta in self.entities.values():
            leading = {id(field) for field in leading_index_fields(meta.model)}
            props = [part for prop in meta.properties.values()
                     for part in (prop.target.properties.values()
                                  if prop.is_embedded and prop.target else (prop,))]
            found += [(meta.model, prop.field) for prop in props
                      if prop.datatype is not None and prop.datatype.kind == "string"
                      and prop.persistent and id(prop.field) in leading]
        return found

    def of_model(self, model: type) -> MetaClass | None:
        return self._by_model.get(model)

    def link_models(self) -> tuple[type[peewee.Model], ...]:
        """The link tables of many-to-many associations, each once (create_schema makes them)."""
        found: dict[type[peewee.Model], None] = {}
        for meta in self.entities.values():
            for link in meta.links:
                found.setdefault(link.through, None)
        return tuple(found)

    def _enum(self, enum_class: type) -> MetaEnum:
        name = enum_name(enum_class)
        meta_enum = self.enums.get(name)
        if meta_enum is None:
            meta_enum = self.enums[name] = MetaEnum(name, enum_class)
        return meta_enum

    def _target(self, meta: MetaClass, prop_name: str, model: type) -> MetaClass:
        target = self._by_model.get(model)
        if target is None:
            raise MetadataError(
                f"{meta.name}.{prop_name} refers to {model.__name__}, which is not a declared entity")
        return target

    def _build(self, meta: MetaClass, declared: Any) -> None:
        model = meta.model
        for base in model.__mro__[1:]:
            if base in self._by_model:
                meta.ancestor = self._by_model[base]
                break
        read_only = set(declared.read_only)
        secret = set(declared.secret)
        embedded: dict[str, list[tuple[str, peewee.Field]]] = {}
        for peewee_field in model._meta.sorted_fields:
            if peewee_field.name in secret:
                continue
            part = getattr(peewee_field, "embedded_in", None)
            if part is not None:
                embedded.setdefault(part[0], []).append((part[1], peewee_field))
                continue
            meta.properties[peewee_field.name] = self._field_property(
                meta, peewee_field, peewee_field.name in read_only)
        for name, parts in embedded.items():
            value_type = getattr(model, name).value_type
            described = MetaClass(value_type.__name__, model, None, (), (), is_embedded=True)
            for part, peewee_field in parts:
                described.properties[part] = self._field_property(described, peewee_field,
                                                                  name in read_only, part)
            self.embeddables.setdefault(described.name, described)
            meta.properties[name] = MetaProperty(name, "EMBEDDED", described.name, "NONE", False,
                                                 name in read_only, True, meta, target=described)
        for name, m2m in model._meta.manytomany.items():
            target = self._target(meta, name, m2m.rel_model)
            link = _link(meta, name, m2m)
            meta.links.append(link)
            meta.properties[name] = MetaProperty(
                name, "ASSOCIATION", target.name, "MANY_TO_MANY", False, name in read_only,
                True, meta, target=target, link=link)
        for name in declared.compositions:
            back_field = next((fk for fk in model._meta.backrefs
                               if fk.backref == name), None)
            if back_field is None:
                raise MetadataError(
                    f"{meta.name}.{name}: no ForeignKeyField declares backref={name!r}")
            target = self._target(meta, name, back_field.model)
            meta.properties[name] = MetaProperty(
                name, "COMPOSITION", target.name, "ONE_TO_MANY", False, name in read_only,
                True, meta, target=target, back_field=back_field)
        for attr_name in dir(model):
            attr = getattr(model, attr_name, None)
            if isinstance(attr, transient):
                datatype = DATATYPES.get(attr.datatype)
                if datatype is None:
                    raise MetadataError(
                        f"{meta.name}.{attr_name}: unknown datatype {attr.datatype!r}")
                meta.properties[attr_name] = MetaProperty(
                    attr_name, "DATATYPE", datatype.name, "NONE", False, True, False, meta,
                    datatype=datatype, getter=attr.getter)
        key = meta.properties.get(meta.natural_key) if meta.natural_key else None
        if meta.natural_key and (key is None or key.datatype is None or not key.persistent
                                 or key.field is None or key.getter is not None):
            raise MetadataError(f"{meta.name}: natural_key {meta.natural_key!r} is not a "
                                "stored attribute of a datatype")
        for name in meta.instance_name:
            if name not in meta.properties:
                raise MetadataError(f"{meta.name}: instance name attribute {name!r} does not exist")
        unknown = secret - set(model._meta.fields)
        if unknown:
            raise MetadataError(f"{meta.name}: secret names unknown fields {sorted(unknown)}")
        unknown = read_only - set(meta.properties)
        if unknown:
            raise MetadataError(f"{meta.name}: read_only names unknown attributes {sorted(unknown)}")
        _check_renames(meta.name, declared.renames, set(model._meta.fields))
        # Every entity needs a persistent, well-formed id and version.
        if "id" not in meta.properties or "version" not in meta.properties:
            raise MetadataError(f"{meta.name} must inherit id and version from Entity")
        if not issubclass(model, Entity):
            raise MetadataError(f"{meta.name} must subclass restsvc.Entity")
        meta.id_kind = _id_kind(meta, model._meta.primary_key)   # type: ignore[arg-type]  # peewee's stub: False when there is none

    def _field_property(self, meta: MetaClass, peewee_field: peewee.Field, read_only: bool,
                        name: str | None = None) -> MetaProperty:
        mandatory = not peewee_field.null and peewee_field.default is None
        name = name or peewee_field.name
        if isinstance(peewee_field, peewee.ForeignKeyField):
            target = self._target(meta, name, peewee_field.rel_model)
            return MetaProperty(name, "ASSOCIATION", target.name, "MANY_TO_ONE",
                                not peewee_field.null, read_only, True, meta,
                                field=peewee_field, target=target)
        if isinstance(peewee_field, EnumField):
            meta_enum = self._enum(peewee_field.enum_class)
            return MetaProperty(name, "ENUM", meta_enum.name, "NONE", mandatory, read_only,
                                True, meta, field=peewee_field, meta_enum=meta_enum)
        datatype = datatype_of(peewee_field)
        if datatype is None:
            raise MetadataError(
                f"{meta.name}.{name}: field type {type(peewee_field).__name__} has no datatype")
        return MetaProperty(name, "DATATYPE", datatype.name, "NONE", mandatory, read_only,
                            True, meta, field=peewee_field, datatype=datatype)


def _check_renames(entity: str, renames: dict[str, str], attributes: set[str]) -> None:
    """``renames={"newName": "oldName"}``: the key is the attribute the model
    declares now, the value the name the database still has. A rename the
    wrong way round (or naming neither side) would let ``migrate`` add an
    empty column beside the old one: refused here, saying which side is which."""
    for new, old in renames.items():
        where = f"{entity}: renames={{{new!r}: {old!r}}}"
        rule = (f"(the key is the new name, an attribute {entity} declares now; the value the "
                f"old name, which only the database still has)")
        if new == old:
            raise MetadataError(f"{where}: the new and the old name are the same")
        if new in attributes and old not in attributes:
            continue
        if old in attributes and new not in attributes:
            raise MetadataError(f"{where} is the wrong way round {rule}: write "
                                f"renames={{{old!r}: {new!r}}}")
        if new in attributes:
            raise MetadataError(f"{where}: {old!r} is still an attribute of {entity} {rule}")
        raise MetadataError(f"{where}: {new!r} is not an attribute of {entity} {rule}")
    olds = list(renames.values())
    twice = sorted({old for old in olds if olds.count(old) > 1})
    if twice:
        raise MetadataError(f"{entity}: renames: {twice[0]!r} is the old name of two attributes")
