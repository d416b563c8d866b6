"""What the metadata is made of: MetaClass, MetaProperty, Link and FetchPlan
(metadata.py derives them from the models once; fetchplan.py builds and
parses plans). One module, since an entity holds its plans and a plan names
its entity."""
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Optional

import peewee

from ..schema.fulltext import FullText
from .datatypes import Datatype, column_json
from .entity import Entity
from .valuetypes import MetaEnum, property_value_type

Captions = Callable[[str], str]


class MetadataError(Exception):
    """A declaration that cannot work; raised at startup."""


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
    def value_datatype(self) -> Datatype:
        """The datatype of an attribute that holds a value (not an enum, a
        reference, a collection or an embedded value)."""
        if self.datatype is None:
            raise MetadataError(f"{self.owner.name}.{self.name} has no datatype")
        return self.datatype

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


@dataclass(eq=False)
class MetaClass:
    name: str
    model: type[Entity]
    ancestor: "MetaClass | None"
    instance_name: tuple[str, ...]
    validators: tuple[Callable[..., Any], ...]
    properties: dict[str, MetaProperty] = field(default_factory=dict)
    fetch_plans: dict[str, "FetchPlan"] = field(default_factory=dict)   # name -> FetchPlan (built-ins too)
    id_kind: str = "uuid"       # uuid (the default), integer (the database assigns it), string
    links: list[Link] = field(default_factory=list)      # Link of each many-to-many attribute
    is_embedded: bool = False   # an embedded value type (no id): properties only
    audited: bool = False       # audit fields filled by the write path (data/write/writer.py)
    history: tuple[str, ...] | None = None       # recorded attributes' names (data/write/history.py); None: no history
    soft_delete: bool = False   # DELETE marks the row (data/write/softdelete.py)
    events: bool = False        # changes published through the outbox (data/write/outbox.py)
    natural_key: str | None = None  # the attribute that names a row (data/transfer/imports.py)
    # Ranked full-text search (schema/fulltext.py): the index, and the attribute
    # of each of its columns, in its order; None: the entity declares none.
    search: FullText | None = None
    searchable: tuple[str, ...] = ()
    tenant: bool = False        # rows belong to a tenant (model/tenancy.py, data/tenancy.py)

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


@dataclass(eq=False)
class FetchPlan:
    name: str | None            # None: an inline plan's, or a nested one
    entity: "MetaClass"
    properties: dict[str, Optional["FetchPlan"]]   # attribute -> nested plan, or None for values

    def to_json(self, top: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.name:
            body["name"] = self.name
        if top:
            body["entity"] = self.entity.name
        items: list[Any] = []
        for name, nested in self.properties.items():
            if nested is None:
                items.append(name)
            else:
                items.append({"name": name, "fetchPlan": nested.to_json(top=False)})
        body["properties"] = items
        return body
