"""What planning a row of an entity needs (importer.py), worked out once per
caller and entity rather than once per row or request: a bulk of 1,000 rows
reads its entity's properties, the caller's attribute levels and each
attribute's checks once, and the caller's next requests not again (kept in
its ``Access.memo``, which lives as long as the gate keeps its principal).

    writable     attribute name -> how a body's value of it is read (its kind,
                 its property, an embedded value's parts the caller may modify);
                 attributes absent from it are ignored, as a plan ignores them
    check        a single value's parse and bounds (column length, digits)
    mandatory    (attribute, field name) of the mandatory attributes
    refers       whether the entity has to-one reference attributes (a global
                 caller's row of a tenant's entity checks their tenant)
    save_hooks   the model's lifecycle hooks around a save (write/hooks.py)
    new_instance the model instance validators see, then inserted (writer.py)

Nothing here decides: the rules stay in ``Importer.plan``, which asks these
tables instead of walking the entity's properties for every row.
"""
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, NamedTuple

import peewee

from ...model.entity import AUDIT_FIELDS, SAVE_HOOKS, Entity
from ...model.valuetypes import ScalarType
from ...security.roles import MODIFY
from ..access import Access

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty

# How a body's value of an attribute is read (``Writable.kind``).
VALUE = 0
REFERENCE = 1
EMBEDDED = 2
CHILDREN = 3
MEMBERS = 4


class Writable(NamedTuple):
    kind: int                                   # VALUE, REFERENCE, EMBEDDED, CHILDREN, MEMBERS
    prop: "MetaProperty"
    parts: "dict[str, MetaProperty] | None"     # EMBEDDED: the parts the caller may modify


class Check(NamedTuple):
    field_name: str
    from_json: Any                              # JSON value -> Python value (raises when invalid)
    max_length: int | None                      # a string column's length
    decimal: peewee.DecimalField | None         # a decimal column (digits checked)


class Shapes:
    """The tables above for one caller (``of``)."""

    @staticmethod
    def of(access: Access) -> "Shapes":
        """The caller's tables: one per Access (and the copies ``replace``
        makes of it, which share its memo and permissions) and ``keeps_audit``."""
        key = (_MEMO_KEY, access.keeps_audit)
        found: Shapes | None = access.memo.get(key)
        if found is None:
            found = access.memo[key] = Shapes(access)
        return found

    def __init__(self, access: Access) -> None:
        self.access = access
        self._writable: dict[tuple[str, int], dict[str, Writable]] = {}
        self._checks: dict[int, Check] = {}
        self._mandatory: dict[tuple[str, int], list[tuple[str, str]]] = {}
        self._references: dict[str, tuple[tuple[str, "MetaProperty"], ...]] = {}
        self._save_hooks: dict[str, tuple[str, ...]] = {}

    def writable(self, meta: "MetaClass", owner: peewee.ForeignKeyField | None) -> dict[str, Writable]:
        """The attributes of ``meta`` a body may write (a child's link to its
        ``owner`` excepted): not the id or version, nothing read-only or
        transient, nothing the caller may not modify; an import's own audit
        values (``DataAccess.importing``) included."""
        key = (meta.name, id(owner))
        table = self._writable.get(key)
        if table is None:
            table = self._writable[key] = self._writable_of(meta, owner)
        return table

    def _writable_of(self, meta: "MetaClass", owner: peewee.ForeignKeyField | None) -> dict[str, Writable]:
        levels = self.access.permissions.attribute_levels(meta.name)
        imported = AUDIT_FIELDS if meta.audited and self.access.keeps_audit else ()
        table: dict[str, Writable] = {}
        for name, prop in meta.properties.items():
            if name in imported:
                table[name] = Writable(VALUE, prop, None)
                continue
            if (name in ("id", "version") or prop.read_only or not prop.persistent
                    or levels.get(name, 0) < MODIFY or (owner is not None and prop.field is owner)):
                continue
            if prop.link is not None:
                table[name] = Writable(MEMBERS, prop, None)
            elif prop.is_collection:
                table[name] = Writable(CHILDREN, prop, None)
            elif prop.is_reference:
                table[name] = Writable(REFERENCE, prop, None)
            elif prop.is_embedded:
                table[name] = Writable(EMBEDDED, prop, {
                    part_name: part for part_name, part in prop.related.properties.items()
                    if levels.get(f"{name}.{part_name}", 0) >= MODIFY})
            else:
                table[name] = Writable(VALUE, prop, None)
        return table

    def check(self, prop: "MetaProperty") -> Check:
        found = self._checks.get(id(prop))
        if found is None:
            field, value_type = prop.field, prop.value_type
            # A datatype's own parse, not its ScalarType's call of it.
            parse = (value_type.datatype.from_json if type(value_type) is ScalarType
                     else value_type.from_json)
            found = self._checks[id(prop)] = Check(
                field.name, parse, getattr(field, "max_length", None) or None,
                field if isinstance(field, peewee.DecimalField) else None)
        return found

    def mandatory(self, meta: "MetaClass", owner: peewee.ForeignKeyField | None) -> list[tuple[str, str]]:
        """(attribute, field name) of the mandatory attributes a row of
        ``meta`` must have (not the id, nor a child's link to its ``owner``)."""
        key = (meta.name, id(owner))
        found = self._mandatory.get(key)
        if found is None:
            found = self._mandatory[key] = [
                (name, prop.field.name) for name, prop in meta.properties.items()
                if prop.mandatory and prop.field is not None and prop.field is not owner
                and name != "id"]
        return found

    def references(self, meta: "MetaClass") -> tuple[tuple[str, "MetaProperty"], ...]:
        """(name, property) of the entity's to-one references."""
        found = self._references.get(meta.name)
        if found is None:
            found = self._references[meta.name] = tuple(
                (name, prop) for name, prop in meta.properties.items()
                if prop.is_reference and not prop.is_collection and prop.field is not None)
        return found

    def save_hooks(self, meta: "MetaClass") -> tuple[str, ...]:
        found = self._save_hooks.get(meta.name)
        if found is None:
            found = self._save_hooks[meta.name] = tuple(
                name for name in SAVE_HOOKS if hasattr(meta.model, name))
        return found


_MEMO_KEY = "shapes"        # Access.memo key (with keeps_audit) of a caller's Shapes


def new_instance(model: type[Entity], values: dict[str, object],
                 filled: Collection[str] = ()) -> Entity:
    """``model(**values)`` without a setattr per value: the model's defaults
    and ``values`` (field name -> value, a reference by its id) as its data,
    every one of them to be written. A default that is made (a callable's)
    is made only for a field neither in ``values`` nor ``filled`` (fields
    the write path fills: an audited entity's audit fields). Values that are
    no field's (set as plain attributes) take ``model(**values)``."""
    if not values.keys() <= model._meta.fields.keys():
        return model(**values)
    instance = model(__no_default__=True)
    meta = model._meta
    data: dict[str, object] = meta._default_by_name.copy()  # type: ignore[attr-defined]  # peewee-stubs: undeclared (get_default_dict's own)
    for name, make in meta._default_callable_list:  # type: ignore[attr-defined]  # peewee-stubs: undeclared
        if name not in values and name not in filled:
            data[name] = make()
    data.update(values)
    instance.__data__ = data
    instance._dirty = set(data)  # type: ignore[attr-defined]  # peewee-stubs: undeclared
    return instance
