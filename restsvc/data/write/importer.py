"""JSON -> planned entity graphs (create, update, upsert), reference 2.5-2.8.

Nothing is half-written: ``plan`` reads the JSON in one pass over the graph,
checks permissions, values and references and collects every violation
without writing; ``writer.Writer`` then writes the whole graph in the write
transaction. What must be consistent with concurrent writers is decided
there, after the parent row is locked by its UPDATE: which stored children a
replaced composition deletes. Concurrent replacements of one collection so
end with one of the requested sets, never a merge.

Only keys present in the JSON change anything. Read-only attributes and
attributes the caller may not modify are ignored silently (the audit
fields of an import by a service, ``DataAccess.importing``, excepted). Composition
collections present in the JSON replace the stored children the caller can
see: listed children are updated or created, the others deleted.
"""
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import peewee

from ...db import id_chunks
from ...errors import (MUST_NOT_BE_NULL, BadRequest, PayloadTooLarge, Text,
                      entity_not_found, invalid_value)
from ...jsonio import JsonObject, JsonValue
from ...numbers import decimal_fits
from ...model.entity import AUDIT_FIELDS, Entity
from ...model.valuetypes import MAX_ARRAY_ITEMS
from ..access import Access, require
from ..columns import among
from ..read.loader import visible_ids
from ..tenancy import Stamps, row_tenant, same_tenant
from ...model.tenancy import TENANT_ATTRIBUTE
from ..ids import id_or_none, parse_id
from .operation import Operation
from .owned import child_ids
from .shapes import EMBEDDED, MEMBERS, REFERENCE, VALUE, Shapes, new_instance

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty

NOT_NULL = "{jakarta.validation.constraints.NotNull.message}"
SIZE = "{jakarta.validation.constraints.Size.message}"
DIGITS = "{jakarta.validation.constraints.Digits.message}"
INVALID = "{restsvc.validation.InvalidValue}"
CUSTOM = "{restsvc.validation.Custom}"


def _violation(path: str, message: str, template: str, value: JsonValue = None) -> JsonObject:
    if not isinstance(value, (str, int, float, bool)) or value is None:
        value = None
    return {"message": message, "messageTemplate": template, "path": path, "invalidValue": value}


def too_many_entities(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge("Too many entities",
                           f"One request may write at most {limit} entities, composition "
                           "children included (svc.rest.max-bulk-size)")


class Importer:
    def __init__(self, access: Access, optimistic_locking: bool, max_entities: int) -> None:
        self.access = access
        self.optimistic_locking = optimistic_locking
        self.violations: list[JsonObject] = []
        self.max_entities = max_entities
        self._planned = 0
        # (entity name, id) -> whether the caller can see the row
        self._visible: dict[tuple[str, str | int], bool] = {}
        # (entity name, id) -> the stored entity its validators see (``expect``)
        self._stored_entities: dict[tuple[str, str | int], Entity] = {}
        self.shapes = Shapes.of(access)
        self.tenants = Stamps(access)

    def expect(self, meta: "MetaClass", ids: Iterable[JsonValue]) -> None:
        """Rows of ``meta`` the bodies about to be planned name (a bulk's
        updates, a change by filter), read with one statement for all of
        them, where ``plan`` would read them one at a time: whether the
        caller sees each, and the stored entities its validators see."""
        keys = {key for value in ids if value is not None
                for key in (id_or_none(meta, value),)
                if key is not None and (meta.name, key) not in self._visible}
        if len(keys) < 2:
            return
        seen = visible_ids(self.access, meta, keys)
        self._visible.update(((meta.name, key), key in seen) for key in keys)
        if not meta.validators or not seen:
            return
        model: Any = meta.model     # a Peewee model: its fields are class attributes
        ordered = sorted(seen, key=str)
        for chunk in id_chunks(ordered):
            for entity in model.select().where(among(model.id, chunk)):
                self._stored_entities[(meta.name, meta.row_id(entity.id))] = entity

    def plan(self, meta: "MetaClass", body: JsonValue, path: str = "",
             entity_id: JsonValue = None, creating: bool | None = None,
             owner: peewee.ForeignKeyField | None = None) -> Operation:
        """One entity object -> Operation. ``entity_id`` from the URL wins over the body's."""
        if not isinstance(body, dict):
            raise BadRequest("Cannot deserialize an entity from JSON", "")
        self._planned += 1
        if self._planned > self.max_entities:
            raise too_many_entities(self.max_entities)
        if entity_id is None:
            entity_id = body.get("id")
        if entity_id is not None:
            entity_id = parse_id(meta, entity_id)
        if creating is False:       # before looking: no update policy, no hint whether it exists
            require(self.access, meta, "update")
        existing = self._exists(meta, entity_id) if entity_id is not None else False
        if creating is None:
            creating = not existing
        if creating and entity_id is not None and meta.database_assigns_id:
            # Whether the row is absent or hidden, the answer is the same.
            self.violations.append(_violation(
                f"{path}id", Text("storedIdOnly", "must name a stored {entity}: the database "
                                  "assigns new ids", entity=meta.name),
                INVALID, body.get("id")))
            entity_id = None
        elif (not creating and not existing) or (
                creating and entity_id is not None and self._stored(meta, entity_id)):
            # A row the caller cannot see is answered as missing, as an update
            # of it is, whether the caller meant to create or to update it.
            raise entity_not_found(meta.name, entity_id)
        require(self.access, meta, "create" if creating else "update")
        if creating and entity_id is None and meta.id_kind == "string":
            self.violations.append(_violation(f"{path}id", MUST_NOT_BE_NULL, NOT_NULL))
        operation = Operation(meta, creating, entity_id, {}, save_hooks=self.shapes.save_hooks(meta))
        if meta.tenant:     # before the children, who belong to the same tenant
            self.tenants.stamp(meta, operation.values, creating, body, self.shapes.references(meta))
        failure = "Entity creation failed" if creating else "Entity update failed"
        writable = self.shapes.writable(meta, owner)     # what a body may write (shapes.py)
        for name, value in body.items():
            found = writable.get(name)
            if found is None:
                continue
            kind, prop, parts = found
            if kind == VALUE:
                self._value(operation, prop, value, path + name)
            elif kind == EMBEDDED:
                assert parts is not None
                self._embedded(operation, prop, value, path + name, failure, parts)
            elif kind == REFERENCE:
                operation.values[prop.field.name] = self._reference(prop, value, failure)
            elif kind == MEMBERS:
                self._members(operation, prop, value, failure)
            else:
                self._children(operation, prop, value, path + name)
        if meta.tenant and self.access.tenant is None and self.shapes.references(meta):
            self._same_tenant(operation)
        clean = getattr(meta.model, "clean", None)     # e.g. User: canonical usernames
        if clean is not None:
            for name, message in clean(operation.values, creating, entity_id):
                self.violations.append(_violation(f"{path}{name}", message, INVALID,
                                                  body.get(name)))
        if not creating and hasattr(meta.model, "check_change"):    # e.g. User
            meta.model.check_change(self.access, entity_id, operation.values)
        if "version" in body and not creating and self.optimistic_locking:
            version = body["version"]
            if isinstance(version, bool) or not isinstance(version, int):
                self.violations.append(_violation(f"{path}version", Text("wholeNumber", "must be a whole number"),
                                                  INVALID, version))
            else:
                # Bounded like any other integer from input: the column's range.
                self._expected_version(operation, meta.properties["version"], version, path)
        self._check_mandatory(operation, path, owner)
        self._validate(operation, path)
        return operation

    def _same_tenant(self, operation: Operation) -> None:
        """A global caller's references stay within the row's tenant (data/tenancy.py)."""
        same_tenant(self.access, operation.meta, operation.values, operation.id, [
            (prop.related, operation.values[prop.field.name], name)
            for name, prop in self.shapes.references(operation.meta)
            if operation.values.get(prop.field.name) is not None])

    def _expected_version(self, operation: Operation, prop: "MetaProperty", version: int,
                          path: str) -> None:
        try:
            operation.expected_version = prop.value_type.from_json(version)
        except ValueError as exc:
            self.violations.append(_violation(f"{path}version", invalid_value(prop.type_name, exc),
                                              INVALID, version))

    def _exists(self, meta: "MetaClass", entity_id: str | int) -> bool:
        """Whether the caller can see the row (asked once per row and plan)."""
        key = (meta.name, entity_id)
        found = self._visible.get(key)
        if found is None:
            found = self._visible[key] = bool(visible_ids(self.access, meta, [entity_id]))
        return found

    @staticmethod
    def _stored(meta: "MetaClass", entity_id: str | int) -> bool:
        """Whether any row has the id, visible or not."""
        model = meta.model
        return model.select(model.id).where(model.id == entity_id).exists()

    def _value(self, operation: Operation, prop: "MetaProperty", value: JsonValue,
               where: str) -> None:
        if value is None:
            operation.values[prop.field.name] = None
            return
        check = self.shapes.check(prop)
        try:
            parsed = check.from_json(value)
        except (ValueError, TypeError, ArithmeticError) as exc:
            message = (Text("invalidEnumValue", "An error occurred while parsing enum. "
                            "Class [{enum}]. Value [{value}].", enum=prop.meta_enum.name,
                            value=value) if prop.meta_enum is not None
                       else invalid_value(prop.type_name, exc))
            self.violations.append(_violation(where, message, INVALID, value))
            return
        max_length = check.max_length
        if max_length and isinstance(parsed, str) and len(parsed) > max_length:
            self.violations.append(_violation(where, Text(
                "size", "size must be between 0 and {max}", max=max_length),
                                              SIZE, value))
            return
        decimal = check.decimal
        if decimal is not None and not decimal_fits(parsed, decimal.max_digits, decimal.decimal_places):
            whole = decimal.max_digits - decimal.decimal_places
            self.violations.append(_violation(
                where, Text("digits", "numeric value out of bounds (<{whole} digits>.<"
                                      "{fraction} digits> expected)", whole=whole,
                            fraction=decimal.decimal_places), DIGITS, value))
            return
        operation.values[check.field_name] = parsed

    def _reference(self, prop: "MetaProperty", value: JsonValue, failure: str) -> str | int | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise BadRequest(f"Attribute '{prop.name}' refers to an entity. "
                             "Property value must be a JSON object literal", "")
        target = prop.related
        missing = BadRequest(failure, f"Referenced entity for property '{prop.name}' is missing")
        target_id = id_or_none(target, value.get("id"))
        if (target_id is None or not self.access.permissions.can(target.name, "read")
                or not self._exists(target, target_id)):
            raise missing
        return target_id

    def _embedded(self, operation: Operation, prop: "MetaProperty", value: JsonValue, where: str,
                  failure: str, parts: "dict[str, MetaProperty]") -> None:
        """An embedded value: the attributes it gives change (null: all of
        them); those the caller may not modify (``address.city``, absent from
        ``parts``) are ignored as any attribute it may not modify."""
        if value is None:
            for part in parts.values():
                operation.values[part.field.name] = None
            return
        if not isinstance(value, dict):
            raise BadRequest(f"Attribute '{prop.name}' is an embedded value. "
                             "Property value must be a JSON object literal", "")
        for name, part_value in value.items():
            given = parts.get(name)
            if given is None or given.read_only:
                continue
            if given.is_reference:
                operation.values[given.field.name] = self._reference(given, part_value, failure)
            else:
                self._value(operation, given, part_value, f"{where}.{name}")

    def _members(self, operation: Operation, prop: "MetaProperty", value: JsonValue,
                 failure: str) -> None:
        """A many-to-many attribute: the exact set of members, each an
        existing row the caller can see (else 400, as a to-one reference)."""
        if not isinstance(value, list):
            raise BadRequest(f"Attribute '{prop.name}' refers to a collection. "
                             "Property value must be a JSON array literal", "")
        if len(value) > MAX_ARRAY_ITEMS:
            raise BadRequest(failure, f"Attribute '{prop.name}' may list at most "
                                      f"{MAX_ARRAY_ITEMS} members")
        target = prop.related
        missing = BadRequest(failure, f"Referenced entity for property '{prop.name}' is missing")
        if value and not self.access.permissions.can(target.name, "read"):
            raise missing
        ids: list[str | int] = []
        for member in value:
            if not isinstance(member, dict):
                raise BadRequest(f"Attribute '{prop.name}' refers to entities. "
                                 "Each member must be a JSON object literal", "")
            member_id = id_or_none(target, member.get("id"))
            if member_id is None:
                raise missing
            ids.append(member_id)
        ids = list(dict.fromkeys(ids))
        if len(visible_ids(self.access, target, ids) if ids else ()) < len(ids):
            raise missing
        operation.members.append((prop, ids))

    def _children(self, operation: Operation, prop: "MetaProperty", value: JsonValue,
                  where: str) -> None:
        if not isinstance(value, list):
            raise BadRequest(f"Attribute '{prop.name}' refers to a collection. "
                             "Property value must be a JSON array literal", "")
        child_meta = prop.related
        # An update's id is always known: only a create may leave it to the database.
        stored: set[str | int] = set() if operation.creating or operation.id is None \
            else child_ids(self.access, prop, operation.id)
        planned: list[Operation] = []
        kept: set[str | int | None] = set()
        for index, child in enumerate(value):
            if not isinstance(child, dict):
                raise BadRequest("Cannot deserialize an entity from JSON", "")
            child_id = parse_id(child_meta, child["id"]) if child.get("id") is not None else None
            if child_id is not None and child_id not in stored and self._exists(child_meta, child_id):
                raise BadRequest("Entity update failed",
                                 f"{child_meta.name} {child_id} belongs to another {operation.meta.name}")
            creating = child_id is None or child_id not in stored
            if child_meta.tenant and operation.meta.tenant:     # the owner's tenant's
                child = {**child, TENANT_ATTRIBUTE: row_tenant(
                    self.access, operation.meta, operation.values, operation.id)}
            sub = self.plan(child_meta, child, f"{where}[{index}].", child_id, creating,
                            owner=prop.back_field)
            kept.add(sub.id)
            planned.append(sub)
        operation.children.append((prop, planned))
        if stored - kept:       # answered now; execute decides on the rows stored then
            require(self.access, child_meta, "delete")

    def _check_mandatory(self, operation: Operation, path: str,
                         owner: peewee.ForeignKeyField | None) -> None:
        for name, key in self.shapes.mandatory(operation.meta, owner):
            missing = (key in operation.values and operation.values[key] is None) or (
                operation.creating and key not in operation.values)
            if missing and not any(v["path"] == f"{path}{name}" for v in self.violations):
                self.violations.append(_violation(f"{path}{name}", MUST_NOT_BE_NULL, NOT_NULL))

    def _validate(self, operation: Operation, path: str) -> None:
        validators = operation.meta.validators
        if not validators or self.violations:
            return
        model = operation.meta.model
        if operation.creating:
            # The write path fills the audit fields (``Writer.audit``): validators see them unset.
            instance = operation.instance = new_instance(
                model, operation.values, AUDIT_FIELDS if operation.meta.audited else ())
        else:
            # Each entity read by ``expect`` is seen once: an id planned twice reads it again.
            stored: Entity | None = self._stored_entities.pop((operation.meta.name, operation.key),
                                                              None)
            instance = stored or model.get_by_id(operation.id)
            for key, value in operation.values.items():
                setattr(instance, key, value)
        for validator in validators:
            for where, message in validator(instance) or ():
                self.violations.append(_violation(f"{path}{where}", message, CUSTOM))
