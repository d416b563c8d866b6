"""The built-in Tenant entity and whose tenant a token speaks for.

A tenant is a row of ``Tenant``: its key ``tenantId`` (``north``) is what the
``tenantId`` column of every tenant-scoped row holds (model/tenancy.py). A
user belongs to at most one tenant (``User.tenantId``; none: a global user),
a client of the settings to the one its ``tenant`` key names, an API key to
its user's or client's, an identity provider's caller to the one its token's
``tenant-claim`` names. The gate asks ``TenantDirectory.tenant_of`` when it
reads a token (once per ``RECHECK_SECONDS``, as it rechecks the token), so a
request costs nothing more, and a disabled tenant's tokens stop working then.
"""
import re
from collections.abc import Callable, Sequence
from typing import Any

import peewee

from ..db import write_transaction
from ..errors import BadRequest, Conflict, Forbidden, NotFound
from ..model.entity import Entity, entity
from ..model.tenancy import TENANT_KEY_LENGTH
from .clients import Clients
from .tokens import Identity

# The specific policy that lets a global caller act for one tenant with the
# ``X-Tenant-Id`` header (security/roles.py SPECIFICS).
ACT_FOR_TENANT = "tenants.actFor"
TENANT_HEADER = "X-Tenant-Id"
TENANT_HEADER_ENVIRON = "HTTP_X_TENANT_ID"
KEY_PATTERN = "[A-Za-z0-9][A-Za-z0-9_.-]*"     # a tenant's key (OpenAPI documents it too)
_KEY = re.compile(KEY_PATTERN)


@entity(name="Tenant", instance_name="name", tenant=True)
class Tenant(Entity):
    tenantId = peewee.CharField(max_length=TENANT_KEY_LENGTH, unique=True)
    name = peewee.CharField(max_length=200)
    enabled = peewee.BooleanField(default=True)

    class Meta:
        table_name = "restsvc_tenant"

    @classmethod
    def clean(cls, values: dict[str, Any], creating: bool,
              entity_id: object) -> list[tuple[str, str]]:
        """A key is a word of letters, digits, ``_``, ``.`` and ``-`` (it goes in
        headers, settings and URLs as it is)."""
        key = values.get("tenantId")
        if isinstance(key, str) and not _KEY.fullmatch(key):
            return [("tenantId", "must be letters, digits, '_', '.' or '-'")]
        return []


def checked_key(key: str) -> str:
    if not _KEY.fullmatch(key) or len(key) > TENANT_KEY_LENGTH:
        raise BadRequest("Invalid tenant", f"A tenant key is at most {TENANT_KEY_LENGTH} "
                         "letters, digits, '_', '.' or '-'")
    return key


class TenantDirectory:
    """Which tenant a token acts for; ``active`` only when the application
    has a tenant-scoped entity of its own (else no token costs a query)."""

    def __init__(self, clients: Clients, active: bool,
                 user_tenant: Callable[[str], str | None]) -> None:
        self.clients = clients
        self.active = active
        self.user_tenant = user_tenant      # Users.tenant_of: a user's tenant, by its id

    def tenant_of(self, who: Identity) -> tuple[bool, str | None]:
        """(whether the token may be used, its tenant's key or None)."""
        if not self.active:
            return True, None
        if who.user_id is not None:
            key = self.user_tenant(who.user_id)
        else:
            client = self.clients.get(who.client_id)
            key = (client.tenant or None) if client is not None else None
        return self.claimed(key)

    def claimed(self, key: str | None) -> tuple[bool, str | None]:
        """(whether a token of tenant ``key`` may be used, the key)."""
        return key is None or self.is_enabled(key), key

    @staticmethod
    def is_enabled(key: str) -> bool:
        return bool(Tenant.select(Tenant.id).where(
            (Tenant.tenantId == key) & (Tenant.enabled == True)).exists())  # noqa: E712  (SQL)


class Tenants:
    """Administration of tenants (the ``restsvc tenant`` commands)."""

    def add(self, key: str, name: str | None = None) -> Tenant:
        key = checked_key(key)
        with write_transaction(Tenant._meta.database):
            if Tenant.select().where(Tenant.tenantId == key).exists():
                raise Conflict("Tenant exists", f"Tenant {key} already exists")
            tenant = Tenant(tenantId=key, name=name or key)
            tenant.save(force_insert=True)
        return tenant

    def set_enabled(self, key: str, enabled: bool) -> None:
        changed = Tenant.update(enabled=enabled, version=Tenant.version + 1).where(
            Tenant.tenantId == key).execute()
        if not changed:
            raise NotFound("Tenant not found", f"Tenant {key} not found")

    def listed(self) -> Sequence[Tenant]:
        return list(Tenant.select().order_by(Tenant.tenantId))


def acting_tenant(directory: TenantDirectory, tenant: str | None, may_act: bool,
                  header: str) -> str | None:
    """The tenant a request acts for by its ``X-Tenant-Id`` header: a global
    caller's with the ``tenants.actFor`` grant; a tenant's caller may name
    only its own. 403 otherwise, 400 for a tenant that is not enabled."""
    if tenant is not None:
        if header != tenant:
            raise Forbidden("Forbidden", f"{TENANT_HEADER} may name only the caller's own tenant")
        return None
    if not may_act:
        raise Forbidden("Forbidden", f"{TENANT_HEADER} needs the {ACT_FOR_TENANT} grant")
    if not _KEY.fullmatch(header) or not directory.is_enabled(header):
        raise BadRequest("Invalid tenant", f"{TENANT_HEADER}: no enabled tenant {header!r}")
    return header
