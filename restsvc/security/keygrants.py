"""Who may make, see and revoke which API keys (the store: apikeys.py).

- A signed-in user makes, lists and revokes its own keys (``rest.enabled``;
  making or revoking writes, listing reads: a token's scopes narrow it).
- The grant ``rest.apiKeys.manage`` (a specific policy; ``system-full-access``
  has it) does the same for any user's keys and any registered client's.
  A key for another user is made only by a caller who holds each of that
  user's roles, one for a client only by one who holds the client's (as
  ``user-management`` changes only users it reaches: users.py).
- A client's own token lists and revokes the client's keys; it makes them
  only under the grant, like a key for any other client.
- Under the grant, a caller with a tenant (security/tenants.py) reaches the
  users of its tenant and the clients bound to it only; the others' keys
  answer as missing ones.
- A key never holds a scope the token that makes it lacks, and a key cannot
  make keys: a leaked key must not outlive its revocation in another one.

A key that is not the caller's and that the grant does not open is
answered as one that does not exist (404).
"""
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import BadRequest, Forbidden, NotFound
from ..jsonio import JsonValue
from .apikeys import Owner, checked_lifetime, checked_name, checked_scope
from .clients import Clients
from .gate import Principal
from .keytable import ApiKey
from .scopes import ACTIONS
from .tokens import user_key
from .users import User, lookup_name, reaches

CREATE, READ, DELETE = "rest.apiKeys.create", "rest.apiKeys.read", "rest.apiKeys.delete"
MANAGE_READ, MANAGE_WRITE = "rest.apiKeys.manage.read", "rest.apiKeys.manage.write"
GRANT = "rest.apiKeys.manage"


@dataclass(frozen=True)
class Creation:
    """A checked request for a new key."""
    owner: Owner
    name: str
    scope: str | None
    lifetime: int | None        # seconds; None: until revoked
    created_by: str


def _refused(action: str) -> Forbidden:
    needs = " and ".join(sorted(ACTIONS[action].needs))
    grant = ACTIONS[action].grant
    return Forbidden("Forbidden", f"This needs the grant {grant} and, for a token with "
                                  f"scopes, the scope {needs}")


def _require(principal: Principal, action: str) -> None:
    if not principal.permissions.specific(action):
        raise _refused(action)


def own_owner(principal: Principal) -> Owner | None:
    """The caller as an owner of keys: a user of this service or a registered
    client (None for an identity provider's user or the anonymous caller)."""
    if not principal.stored or principal.client_id is None:
        return None
    if principal.is_user:
        return Owner(principal.user_id, principal.username) if principal.user_id else None
    return Owner(client_id=principal.client_id)


def _own(principal: Principal) -> Owner:
    own = own_owner(principal)
    if own is None:
        raise Forbidden("Forbidden", "Only users and clients of this service have API keys; "
                                     f"name the owner (username or clientId) under the grant "
                                     f"{GRANT}")
    return own


def is_own(principal: Principal, row: ApiKey) -> bool:
    own = own_owner(principal)
    if own is None:
        return False
    if row.user_id is not None:
        return own.user_id is not None and user_key(row.user_id) == own.user_id
    return own.user_id is None and row.client_id == own.client_id


def named_owner(clients: Clients, username: JsonValue, client_id: JsonValue,
                tenant: str | None = None) -> Owner:
    """The user or client a request names (404 when there is none; for a
    caller with a ``tenant``, when it is not of that tenant: docs/tenants.md)."""
    if username is not None and client_id is not None:
        raise BadRequest("Invalid API key owner", "Name a username or a clientId, not both")
    if not isinstance(username if username is not None else client_id, str):
        raise BadRequest("Invalid API key owner", "username and clientId are texts")
    if username is not None:
        user: User | None = User.select().where(
            User.username == lookup_name(str(username))).first()
        if user is None or (tenant is not None and user.tenantId != tenant):
            raise NotFound("User not found", f"User {str(username)[:200]} not found")
        return Owner(user_key(user.id), user.username)
    client = clients.get(str(client_id))
    if client is None or (tenant is not None and client.tenant != tenant):
        raise NotFound("Client not found", f"Client {str(client_id)[:200]} is not registered")
    return Owner(client_id=client.client_id)


def _names_another(principal: Principal, username: JsonValue, client_id: JsonValue) -> bool:
    """Whether a request names an owner other than the caller."""
    own = own_owner(principal)
    if username is None and client_id is None:
        return False
    if own is None:
        return True
    if own.user_id:
        return client_id is not None or lookup_name(str(username)) != own.username
    return username is not None or client_id != own.client_id


def listing_owner(principal: Principal, clients: Clients, username: str | None,
                  client_id: str | None) -> Owner:
    """Whose keys a list shows: the caller's own, or under the grant the one named."""
    if not _names_another(principal, username, client_id):
        own = _own(principal)
        _require(principal, READ)
        return own
    _require(principal, MANAGE_READ)
    return named_owner(clients, username, client_id, principal.tenant)


def creation(principal: Principal, clients: Clients, body: Mapping[str, JsonValue]) -> Creation:
    """A new key's owner, name, scope and lifetime, as ``body`` asks and the
    caller may (400, 403 or 404 otherwise)."""
    if principal.key_id is not None:
        raise Forbidden("Forbidden", "An API key cannot make API keys: use a token of a "
                                     "sign-in")
    name, lifetime = checked_name(body.get("name")), checked_lifetime(body.get("expiresIn"))
    username, client_id = body.get("username"), body.get("clientId")
    own, another = own_owner(principal), _names_another(principal, username, client_id)
    if own is not None and own.user_id and not another:
        _require(principal, CREATE)
        owner = own
    else:
        _require(principal, MANAGE_WRITE)
        owner = named_owner(clients, username, client_id, principal.tenant) if another \
            else _own(principal)
        _check_reach(principal, clients, owner)
    client = clients.get(owner.client_id) if owner.client_id else None
    scope = checked_scope(body.get("scope"), principal.permissions.scope,
                          client.scopes if client is not None else ())
    return Creation(owner, name, scope, lifetime, principal.username)


def _check_reach(principal: Principal, clients: Clients, owner: Owner) -> None:
    """403 unless the caller holds every role of the key's owner."""
    if owner.user_id:
        user: User = User.get(User.id == owner.user_id)
        codes: tuple[str, ...] = user.role_codes
    else:
        client = clients.get(owner.client_id)
        assert client is not None           # named_owner found it
        codes = client.resource_roles + client.row_level_roles
    if not reaches(principal.permissions.granted, codes):
        raise Forbidden("Forbidden", f"The {owner.label} holds roles you do not hold")


def check_key(principal: Principal, clients: Clients, row: ApiKey | None, own_action: str,
              manage_action: str) -> ApiKey:
    """The key ``row`` when the caller may read (or revoke) it: its own under
    ``own_action``, anyone's under ``manage_action``; 403 when it may do
    neither to any key, 404 when the key is not there or not its to see."""
    may_own = principal.permissions.specific(own_action)
    may_manage = principal.permissions.specific(manage_action)
    if not may_own and not may_manage:
        raise _refused(own_action)
    if row is None or not ((may_manage and _in_tenant(principal.tenant, clients, row))
                           or (may_own and is_own(principal, row))):
        raise NotFound("API key not found", "No such API key")
    return row


def _in_tenant(tenant: str | None, clients: Clients, row: ApiKey) -> bool:
    """Whether a key is one a caller of ``tenant`` may manage: any for a
    global caller, else a key of a user of its tenant or of a client bound to it."""
    if tenant is None:
        return True
    if row.user_id is None:
        client = clients.get(row.client_id) if row.client_id else None
        return client is not None and client.tenant == tenant
    return bool(User.select().where((User.id == row.user_id) & (User.tenantId == tenant)).exists())
