"""Metadata: the MetaClass, MetaProperty and MetaEnum of every entity (meta.py),
derived once from the models."""
import re
from collections.abc import Iterable, Iterator
from typing import Any

import peewee

from ..db import leading_index_fields
from ..schema.fulltext import WEIGHTS, FullText
from ..schema.linkkeys import keys_column
from .datatypes import DATATYPES, datatype_of
from .entity import Entity, declaration_of
from .fetchplan import FetchPlanError, build_built_in_plans, build_named_plans
from .fields import EnumField, transient
# Their names here too, where the rest of restsvc has always imported them.
from .meta import Captions as Captions, Link as Link, MetaClass as MetaClass
from .meta import MetadataError as MetadataError, MetaProperty as MetaProperty
from .valuetypes import MetaEnum as MetaEnum, enum_name     # MetaEnum: its name here too



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
    through = m2m.get_through_model()  # type: ignore[no-untyped-call, unused-ignore]  # peewee-stubs: unannotated
    keys = [f for f in through._meta.sorted_fields if isinstance(f, peewee.ForeignKeyField)]
    owner = [f for f in keys if f.rel_model is meta.model]
    member = [f for f in keys if f.rel_model is m2m.rel_model and f is not owner[0]] \
        if len(owner) == 1 else []      # (Field == builds SQL: compared by identity)
    if len(keys) != 2 or len(owner) != 1 or len(member) != 1:
        raise MetadataError(f"{meta.name}.{name}: a many-to-many association needs a link "
                            "table with one foreign key to each side (not the same entity)")
    return Link(through, owner[0], member[0], _keys_field(meta, name, m2m))


class Metadata:
    """All entities and enums of the application, by name."""

    def __init__(self, models: Iterable[type[Entity]], extra_enums: Iterable[type] = (),
                 search_language: str = "english") -> None:
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
                             events=declared.events, natural_key=declared.natural_key,
                             tenant=declared.tenant)
            self.entities[meta.name] = meta
            self._by_model[model] = meta
        for enum_class in extra_enums:
            self._enum(enum_class)
        for meta in self.entities.values():
            self._build(meta, declaration_of(meta.model))
            _searchable(meta, declaration_of(meta.model).search, search_language)
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

    def full_text(self) -> list[FullText]:
        """The full-text index of each entity declaring searchable attributes."""
        return [meta.search for meta in self.entities.values() if meta.search is not None]

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


def _searchable(meta: MetaClass, search: dict[str, str], language: str) -> None:
    """``@entity(search={"name": "A"})``: each a stored string attribute of
    the entity's own table, each weight one of ``fulltext.WEIGHTS``."""
    for name, weight in search.items():
        prop = meta.properties.get(name)
        if prop is None or prop.field is None or not prop.persistent or prop.datatype is None \
                or prop.datatype.kind != "string" or prop.meta_enum is not None:
            raise MetadataError(f"{meta.name}: search names {name!r}, which is not a stored "
                                "string attribute")
        if weight not in WEIGHTS:
            raise MetadataError(f"{meta.name}: search weight of {name!r} is {weight!r}, not one "
                                f"of {', '.join(WEIGHTS)}")
    if search:
        meta.searchable = tuple(search)
        meta.search = FullText(meta.model._meta.table_name,
                               tuple(meta.properties[name].field.column_name for name in search),
                               tuple(search.values()), language)


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
