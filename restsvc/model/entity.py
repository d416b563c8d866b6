"""The Entity base model and the declaration helper applications use.

    @entity(instance_name="name")
    class Customer(Entity):
        name = peewee.CharField()
        grade = EnumField(CustomerGrade, null=True)

A field with ``null=False`` is mandatory. Declaring only records facts on the
class; metadata is built from them when the application starts.
"""
import copy
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import peewee

from ..db import database_proxy
from .fields import DateTimeField, Embedded
from .tenancy import add_tenant_column


_last_id = [0]
_id_lock = threading.Lock()     # threads of one worker must never share an id
# Random bytes drawn from the OS a few kilobytes at a time (one system call
# per 455 ids, not one per id), and dropped in a forked child, which must
# not make the ids its parent makes.
_RANDOM_BYTES, _RANDOM_DRAW = 9, 4095
_entropy: list[Any] = [b"", 0]       # [bytes, position of the next unused]
os.register_at_fork(after_in_child=lambda: _entropy.__setitem__(slice(None), [b"", 0]))


# The 48 bits of the millisecond, and the bits of version 7 and of the RFC 4122 variant.
_MILLIS = (1 << 48) - 1
_KEPT, _MARKS = ~(0xF << 76) & ~(0x3 << 62), (0x7 << 76) | (0x2 << 62)


def new_id() -> uuid.UUID:
    """A time-ordered UUID (version 7, RFC 9562): rows sort by creation when
    ordered by id (also within one millisecond in one process), and new keys
    land at the end of the primary-key index. A bulk's row takes one or two,
    so the version's and the variant's bits are set together (``_KEPT``, ``_MARKS``)."""
    millis = time.time_ns() // 1_000_000
    with _id_lock:
        pool, at = _entropy
        if at + _RANDOM_BYTES > len(pool):
            pool, at = os.urandom(_RANDOM_DRAW), 0
            _entropy[0] = pool
        _entropy[1] = at + _RANDOM_BYTES
        value = ((millis & _MILLIS) << 80
                 | int.from_bytes(pool[at:at + _RANDOM_BYTES], "big")) & _KEPT | _MARKS
        if value <= _last_id[0]:
            value = _last_id[0] + 1
        _last_id[0] = value
    return uuid.UUID(int=value)


class Entity(peewee.Model):
    """Every entity has a UUID ``id`` and an integer ``version``."""

    # Any field type: an entity may declare an id of its own (CharField, AutoField).
    id: "peewee.Field[Any]" = peewee.UUIDField(primary_key=True, default=new_id)
    version = peewee.IntegerField(default=1)

    class Meta:
        database = database_proxy
        legacy_table_names = False


@dataclass(frozen=True)
class EntityDeclaration:
    name: str
    instance_name: tuple[str, ...]
    read_only: tuple[str, ...]
    compositions: tuple[str, ...]
    fetch_plans: tuple[Any, ...]     # each a plan's JSON form
    validators: tuple[Callable[..., Any], ...] = field(default=())
    secret: tuple[str, ...] = field(default=())
    renames: dict[str, str] = field(default_factory=dict)
    audited: bool = False
    history: tuple[str, ...] | None = None           # None: no history; () every attribute; else the attributes
    soft_delete: bool = False
    events: bool = False            # changes published through the outbox (restsvc/events/)
    natural_key: str | None = None  # an attribute that names a row (imports, references)
    search: dict[str, str] = field(default_factory=dict)   # searchable attribute -> weight letter
    tenant: bool = False            # rows belong to a tenant (model/tenancy.py)


E = TypeVar("E", bound=Entity)
# validator(instance) -> [(attribute path, message), ...]
Validator = Callable[[Any], Iterable[tuple[str, str]]]


def entity(name: str | None = None, instance_name: str | Sequence[str] = (),
           read_only: Sequence[str] = (), compositions: Sequence[str] = (),
           fetch_plans: Sequence[Mapping[str, Any]] = (), validators: Sequence[Validator] = (),
           secret: Sequence[str] = (), renames: Mapping[str, str] | None = None,
           audited: bool = False, history: bool | Sequence[str] = False,
           soft_delete: bool = False, events: bool = False,
           natural_key: str | None = None,
           search: Mapping[str, str] | None = None,
           tenant: bool = False) -> Callable[[type[E]], type[E]]:
    """Declare a Peewee model as an entity.

    name           entity name (default: the class name)
    instance_name  attribute name(s) that make the instance name
    read_only      attributes clients cannot write (the server sets them)
    compositions   back-references (``backref`` of a child's ForeignKeyField)
                   whose children are owned by this entity
    fetch_plans    named fetch plans in the inline JSON format, e.g.
                   {"name": "order-with-details", "extends": "_local",
                    "properties": [{"name": "customer", "fetchPlan": "_base"}]}
    validators     callables ``validator(instance) -> [(path, message), ...]``
    secret         attributes that are stored but never shown: not in metadata,
                   fetch plans, responses or filters (e.g. a password hash)
    renames        {"newName": "oldName"}: attributes renamed since the database
                   was made; ``restsvc migrate`` renames the column, keeping its values
    audited        adds the read-only audit fields ``createdBy``, ``createdDate``,
                   ``lastModifiedBy`` and ``lastModifiedDate`` (nullable columns;
                   one the model declares itself is kept), filled on every write
    history        True, or a list of attribute names: every create, update and
                   delete is recorded as a ``HistoryItem`` (data/write/history.py)
    soft_delete    DELETE marks the row (read-only ``deletedDate``, ``deletedBy``)
                   and every read leaves it out; restore and purge bring it
                   back or remove it for good (data/write/softdelete.py)
    events         every committed create, update and delete is published: an
                   event row in the write's transaction (data/write/outbox.py), read
                   by the change feed and the webhook deliveries
    natural_key    a scalar attribute whose value names one live row (declare it
                   unique, e.g. with a unique index): imports upsert by it
                   (``?mode=upsertByKey``) and references may name a row by it
                   (``customer.email`` in a CSV column, ``{"email": ...}`` in JSON)
    search         {"attribute": "A"}: string attributes searched by ranked full-text
                   search (``/search?q=``), each with its weight, "A" (most) to "D"
                   (least); ``restsvc migrate`` creates the index (schema/fulltext.py)
    tenant         rows belong to a tenant: adds the read-only ``tenantId`` (the
                   tenant's key), first in every index; a caller with a tenant
                   reads and writes only its tenant's rows (restsvc/docs/tenants.md)

    A model may define lifecycle hooks (restsvc/docs/hooks.md): a classmethod
    ``clean(values, creating, entity_id)`` sees the values a create or update
    writes before the validators run, may rewrite them to a canonical form and
    returns ``(path, message)`` pairs of what it refuses; inside the write's
    transaction ``before_save(cls, values, creating, entity_id)``,
    ``after_save(self, created)``, ``before_delete(self)`` and
    ``after_delete(self)`` (each may take ``data``: the caller's DataAccess);
    after the commit, with ``events=True``, ``after_commit(cls, event, data)``.
    """
    if isinstance(instance_name, str):
        instance_name = (instance_name,)

    def declare(model: type[E]) -> type[E]:
        if not (isinstance(model, type) and issubclass(model, Entity)):
            raise TypeError("@entity decorates subclasses of restsvc.Entity")
        if hasattr(model, "after_commit") and not events:
            raise TypeError(f"{model.__name__} has after_commit: declare it with events=True "
                            "(its hook runs on the entity's events)")
        _add_embedded_columns(model)
        added = _add_audit_fields(model) if audited else ()
        if soft_delete:
            added += _add_fields(model, DELETION_FIELDS)
        if tenant:
            added += add_tenant_column(model)
        model._entity = EntityDeclaration(      # type: ignore[attr-defined]
            name=name or model.__name__,
            instance_name=tuple(instance_name),
            read_only=tuple(dict.fromkeys((*read_only, *added))),
            compositions=tuple(compositions),
            fetch_plans=tuple(fetch_plans),
            validators=tuple(validators),
            secret=tuple(secret),
            renames=dict(renames or {}),
            audited=bool(audited),
            history=None if not history else (() if history is True else tuple(history)),
            soft_delete=bool(soft_delete),
            events=bool(events),
            natural_key=natural_key,
            search=dict(search or {}),
            tenant=bool(tenant),
        )
        return model
    return declare


def _add_embedded_columns(model: type["Entity"]) -> None:
    """Each ``Embedded`` attribute's fields become columns ``<attribute>_<field>``."""
    for name, value in list(vars(model).items()):
        if not isinstance(value, Embedded):
            continue
        templates: dict[str, peewee.Field] = value.value_type._embeddable_fields  # type: ignore[attr-defined]
        for part, template in templates.items():
            column = copy.copy(template)        # an unbound template: each owner its own
            if isinstance(column, peewee.ForeignKeyField):
                column.backref = "+"
            column.embedded_in = (name, part)       # type: ignore[attr-defined]
            model._meta.add_field(f"{name}_{part}", column)


AUDIT_FIELDS = ("createdBy", "createdDate", "lastModifiedBy", "lastModifiedDate")
DELETION_FIELDS = ("deletedDate", "deletedBy")


def _add_audit_fields(model: type["Entity"]) -> tuple[str, ...]:
    return _add_fields(model, AUDIT_FIELDS)


def _add_fields(model: type["Entity"], names: tuple[str, ...]) -> tuple[str, ...]:
    """Audit or deletion attributes; who as text, when as an instant (UTC)."""
    for name in names:
        if name not in model._meta.fields:
            column = (DateTimeField(null=True) if name.endswith("Date")
                      else peewee.CharField(max_length=255, null=True))
            model._meta.add_field(name, column)
    return names


# The lifecycle hooks around creates and updates (restsvc/docs/hooks.md): a
# model with one is never written by a lone statement (data/write/shapes.py).
SAVE_HOOKS = ("before_save", "after_save")


def declaration_of(model: type) -> EntityDeclaration:
    declared: EntityDeclaration | None = model.__dict__.get("_entity")
    if declared is None:
        raise TypeError(f"{model.__name__} is not declared with @entity")
    return declared
