"""Tenant-scoped entities: the ``tenantId`` column ``@entity(tenant=True)`` adds.

The column holds the tenant's key (``north``); the data layer fills it on
every create and limits every read of a caller with a tenant to it
(restsvc/docs/tenants.md). It leads every index and unique constraint the
model declares, so a tenant's page is read from an index as a single-tenant
page is, and a value unique "per tenant" (an email) may repeat across tenants.
"""
import peewee

TENANT_ATTRIBUTE = "tenantId"
TENANT_KEY_LENGTH = 64


def add_tenant_column(model: type[peewee.Model]) -> tuple[str, ...]:
    """Add the tenant column and put it first in the model's indexes; the
    names added. A model that declares ``tenantId`` itself keeps its column
    and its indexes as declared (the built-in User and Tenant)."""
    meta = model._meta
    if TENANT_ATTRIBUTE not in meta.fields:
        meta.add_field(TENANT_ATTRIBUTE, peewee.CharField(max_length=TENANT_KEY_LENGTH))
        _lead_indexes(model)
    return (TENANT_ATTRIBUTE,)


def _lead_indexes(model: type[peewee.Model]) -> None:
    """Each ``index=True``/``unique=True`` column and each ``Meta.indexes``
    entry becomes an index on (tenantId, ...). Foreign keys keep their own
    index (a global caller's "rows referring to these" stays an index read),
    and so do ``ModelIndex`` objects (partial indexes: their SQL is the model's)."""
    meta = model._meta
    indexes: list[object] = []
    for field in meta.sorted_fields:
        if field.primary_key or field.name == TENANT_ATTRIBUTE \
                or isinstance(field, peewee.ForeignKeyField) or not (field.index or field.unique):
            continue
        indexes.append(((TENANT_ATTRIBUTE, field.name), bool(field.unique)))
        field.index = field.unique = False
    for index in meta.indexes:
        if isinstance(index, (tuple, list)) and tuple(index[0])[:1] != (TENANT_ATTRIBUTE,):
            index = ((TENANT_ATTRIBUTE, *index[0]), index[1])
        indexes.append(index)
    if not any(isinstance(index, tuple) for index in indexes):
        indexes.append(((TENANT_ATTRIBUTE,), False))     # a tenant's rows, read by one index
    meta.indexes = indexes
