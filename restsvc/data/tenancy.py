"""Tenants in the data layer: a caller with a tenant reads and writes only
its tenant's rows of tenant-scoped entities (model/tenancy.py).

Not a row rule a role could forget: ``EntityQuery.row_condition`` adds the
condition to every statement of the read path for every caller with a
tenant (lists, loads by id, counts, aggregates, cursors, exports, history,
references, compositions, members, services' DataAccess, predefined
queries), so another tenant's row answers as a missing row does. Writes are
planned through the same reads (the importer's visibility checks), and
``stamp`` gives every row a tenant's caller creates its tenant.
"""
from typing import TYPE_CHECKING, Any

import peewee

from ..db import execute
from ..errors import BadRequest
from ..model.datatypes import FileRef
from ..model.tenancy import TENANT_ATTRIBUTE
from ..security.tenants import Tenant

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..model.metadata import MetaClass, MetaProperty
    from .access import Access


def scoped(access: "Access", meta: "MetaClass") -> bool:
    """Whether reads of ``meta`` by this caller are limited to its tenant."""
    return meta.tenant and access.tenant is not None


def tenant_condition(access: "Access", meta: "MetaClass") -> peewee.Node | None:
    """``tenantId = <the caller's tenant>``, or None when nothing limits the caller."""
    if not scoped(access, meta):
        return None
    condition: peewee.Node = meta.model._meta.fields[TENANT_ATTRIBUTE] == access.tenant
    return condition


class Stamps:
    """The tenants of the rows one request writes (``stamp``). The tenants
    found in the Tenant table are kept in the caller's ``Access.memo``: a
    bulk of a thousand rows asks once per tenant, not once per row, and a
    caller's next creates ask again only when the gate has read its token
    again (``gate.RECHECK_SECONDS``: a new principal, a new Access), as a
    disabled tenant's tokens stop working then."""

    def __init__(self, access: "Access") -> None:
        self.access = access
        self.known: set[str] = access.memo.setdefault(_KNOWN, set())

    def stamp(self, meta: "MetaClass", values: dict[str, Any], creating: bool,
              body: dict[str, Any], references: "Sequence[tuple[str, MetaProperty]]") -> None:
        """The tenant of a row written: a tenant's caller's own on a create
        (``tenantId`` is read-only: a value in the body is ignored, as any
        read-only attribute's is); a global caller names it on a create (a
        tenant of the Tenant table; a new Tenant's own key), else it is the
        tenant of the first tenant's row the body refers to (``references``:
        the entity's to-one references), else the default
        (``svc.tenants.default``); it cannot move a row to another tenant.
        A tenant's caller whose body names another tenant is refused (400,
        the same for a tenant that exists and one that does not)."""
        access = self.access
        if not meta.tenant:
            return
        given = body.get(TENANT_ATTRIBUTE)
        if access.tenant is not None and given is not None and given != access.tenant:
            raise BadRequest("Entity creation failed" if creating else "Entity update failed",
                             f"{TENANT_ATTRIBUTE} is read-only: the caller's rows belong to its "
                             f"tenant {access.tenant!r}")
        if not creating:
            return
        if given is None and access.tenant is None and meta.model is not Tenant:
            given = _referred_tenant(access, references, body) or access.default_tenant
        if access.tenant is not None:
            values[TENANT_ATTRIBUTE] = access.tenant
        elif given is not None:
            if meta.model is Tenant and isinstance(given, str):    # a new tenant's own key
                values[TENANT_ATTRIBUTE] = given
                return
            if not isinstance(given, str) or not self._known(given):
                raise BadRequest("Entity creation failed", f"No tenant {given!r}")
            values[TENANT_ATTRIBUTE] = given

    def _known(self, key: str) -> bool:
        if key in self.known:
            return True
        access = self.access
        sql = access.sql(("tenant-known",), lambda: Tenant.select(peewee.SQL("1")).where(
            Tenant.tenantId == ""))
        if execute(access.database, sql, (key,)).fetchone() is None:
            return False
        self.known.add(key)
        return True


_KNOWN = "tenancy: tenants found"      # Access.memo key of Stamps.known


def _referred_tenant(access: "Access", references: "Sequence[tuple[str, MetaProperty]]",
                     body: dict[str, Any]) -> str | None:
    """The tenant of the first tenant-scoped row the body refers to by id
    (an order's customer's): its other references must be of it too."""
    for name, prop in references:
        value = body.get(name)
        if not (prop.related is not None and prop.related.tenant
                and isinstance(value, dict) and "id" in value):
            continue
        try:
            tenant = _tenant_of(access, prop.related, value["id"])
        except (ValueError, TypeError, AttributeError):
            continue        # not an id: the reference's own check answers it
        if tenant is not None:
            return tenant
    return None


def _tenant_of(access: "Access", meta: "MetaClass", entity_id: object) -> str | None:
    """The stored tenant of ``meta``'s row ``entity_id`` (None: no such row);
    the id converted as the id column converts it (ValueError, TypeError:
    not an id)."""
    model: Any = meta.model
    sql = access.sql(("row-tenant", model), lambda: model.select(model.tenantId).where(
        model.id == peewee.Value(None, converter=False)))
    found = execute(access.database, sql, (model.id.db_value(entity_id),)).fetchone()
    return found[0] if found is not None and isinstance(found[0], str) else None


def row_tenant(access: "Access", meta: "MetaClass", values: dict[str, Any],
               entity_id: object) -> str | None:
    """The tenant of a row being written: the one it is given, else the stored row's."""
    tenant = values.get(TENANT_ATTRIBUTE)
    if tenant is None and entity_id is not None:
        tenant = _tenant_of(access, meta, entity_id)
    return tenant if isinstance(tenant, str) else None


def same_tenant(access: "Access", meta: "MetaClass", values: dict[str, Any], entity_id: object,
                references: list[tuple["MetaClass", object, str]]) -> None:
    """A global caller's write: a tenant-scoped row refers only to rows of its
    own tenant (a tenant's caller sees no others: its reads refuse them)."""
    if not meta.tenant or not references:
        return
    tenant = row_tenant(access, meta, values, entity_id)
    for target, target_id, name in references:
        if not target.tenant:
            continue
        if _tenant_of(access, target, target_id) != tenant:
            raise BadRequest("Entity creation failed" if entity_id is None
                             else "Entity update failed",
                             f"Referenced entity for property '{name}' is missing")


def hides_file(access: "Access", ref: FileRef) -> bool:
    """Whether a tenant's caller is refused a file: a row of a tenant-scoped
    entity of another tenant refers to it and none of its own tenant does
    (the answer is the missing file's). A file no tenant's row refers to (one
    just uploaded) is the caller's to link, as before."""
    if access.tenant is None:
        return False
    prefix = f"{ref.storage}://{ref.path}?"     # the reference, whatever the name it gives
    others = False
    for meta in access.metadata.entities.values():
        if not meta.tenant:
            continue
        model: Any = meta.model
        for prop in meta.properties.values():
            if prop.datatype is None or prop.datatype.name != "fileRef" or prop.field is None:
                continue
            column = model._meta.fields[prop.field.name]
            tenants = {key for (key,) in model.select(model.tenantId).where(
                column.startswith(prefix)).distinct().tuples()}
            if access.tenant in tenants:
                return False
            others = others or bool(tenants)
    return others
