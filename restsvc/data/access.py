"""Who is asking, as the data layer sees it: permissions plus session values."""
import datetime
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import Forbidden, Text

if TYPE_CHECKING:
    import peewee

    from ..model.metadata import MetaClass, Metadata
    from ..security.roles import Permissions

_WORDS = {"read": "Reading", "create": "Creation", "update": "Updating", "delete": "Deletion"}


@dataclass(frozen=True)
class Access:
    metadata: "Metadata"
    permissions: "Permissions"
    session: dict[str, str]   # values for :session$username / :session$userId
    database: "peewee.Database"
    sql_cache: dict[Any, Any]   # shared per app: SQL text of parameter-free query shapes
    include_deleted: bool = False   # soft-deleted rows too (``?includeDeleted=true``, by grant)
    # The caller's tenant (security/tenants.py): every read and write of a
    # tenant-scoped entity is limited to its rows (data/tenancy.py); None: a global caller.
    tenant: str | None = None
    # Where a global caller's create goes when it names no tenant and refers
    # to no tenant's row (svc.tenants.default); None: it must name one.
    default_tenant: str | None = None
    # Set only by application code through DataAccess (data/bound.py), never
    # from a request: the name writes are recorded under instead of the
    # caller's (a service writing in its own name), and whether audit values
    # given in a body are kept (imports).
    writer: str | None = None
    keeps_audit: bool = False
    # What is worked out once per caller and kept (filter trees of URL
    # filters: DataManager.filter; what planning a write needs: write/shapes.py;
    # the tenants found: tenancy.Stamps); shared by the copies ``replace``
    # makes. It lives as long as the Access: the gate's RECHECK_SECONDS.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def sql(self, key: Hashable, build: "Callable[[], peewee.Query]") -> str:
        """The SQL text of the statement shape ``key`` (its parameters passed
        apart), built by ``build`` once per app: building a Peewee query
        costs more than running a small statement."""
        text: str | None = self.sql_cache.get(key)
        if text is None:
            text = self.sql_cache[key] = build().sql()[0]
        return text

    @property
    def username(self) -> str:
        """Who writes, as audit fields, history and ``deletedBy`` name it: a
        service writing in its own name, else the user, the client id of a
        client-credentials token, else restsvc itself (outside requests)."""
        return self.writer or self.session.get("username") or SERVICE_NAME


SERVICE_NAME = "restsvc"


def utc_now() -> datetime.datetime:
    """The clock of audit fields and history: UTC, stored without a zone."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


# The userId of a caller that is not a user (a client-credentials token): an
# id that parses wherever an id is expected and that no row has.
NO_USER_ID = "00000000-0000-0000-0000-000000000000"


def access_for(app: Any, principal: Any, acting_for: str | None = None) -> Access:
    """The caller as the data layer sees it; one Access per principal (the
    gate keeps a token's principal while it trusts it), not one per request.
    ``acting_for``: the tenant a global caller acts for (``X-Tenant-Id``,
    checked by the caller: security/tenants.py)."""
    memo = app.data.accesses
    key = id(principal) if acting_for is None else (id(principal), acting_for)
    found = memo.get(key)
    if found is not None and found[0] is principal:
        known: Access = found[1]
        return known
    session = {"username": principal.username,
               "userId": str(principal.user_id or NO_USER_ID)}
    tenant = acting_for or principal.tenant
    access = Access(app.metadata, principal.permissions, session, app.database, app.data.sql_cache,
                    tenant=tenant,
                    default_tenant=None if tenant else app.settings.default_tenant or None)
    if len(memo) >= _ACCESSES_MAX:
        memo.clear()
    memo[key] = (principal, access)     # holds it: its id is not reused meanwhile
    return access


_ACCESSES_MAX = 10_000


def require(access: Access, meta: "MetaClass", operation: str) -> None:
    """403 ``Reading forbidden`` etc. unless the caller's roles allow the operation."""
    if not access.permissions.can(meta.name, operation):
        word = _WORDS[operation]
        raise Forbidden(f"{word} forbidden", Text(f"forbidden.{operation}", word + " of the "
                                                  "{entity} is forbidden", entity=meta.name))
