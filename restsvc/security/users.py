"""The built-in User entity and what the token endpoint, userInfo and the CLI need of it.

Every application gets ``User`` beside its own entities. The password is a
salted slow hash (the same pbkdf2 as client secrets) and a secret attribute:
never in metadata or responses, never written through the entities API.

A user's roles are a comma-separated list of role codes in the secret
attribute ``roles`` rather than a second table: assigning roles is a security
act done with ``restsvc user``, never through the generic entities API (where
the ``user-management`` role could otherwise grant itself ``system-full-access``);
a sign-in reads one row; deleting a user needs no cascade. Resource and
row-level codes share one namespace (the registry refuses duplicates), so one
list holds both.
"""
import unicodedata
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import peewee

from ..db import write_transaction
from ..errors import BadRequest, Conflict, Forbidden, NotFound
from ..model.entity import Entity, entity
from ..model.tenancy import TENANT_KEY_LENGTH
from ..jsonio import JsonObject
from . import clients
from .clients import DECOY, hash_secret, is_hash, verify_at_cost
from .keytable import revoke_user_keys
from .registry import RoleRegistry
from .roles import SYSTEM_FULL_ACCESS
from .tenants import Tenant, TenantDirectory
from .tokens import Identity, TokenStore

if TYPE_CHECKING:
    from .roles import Permissions


class Changer(Protocol):
    """Who changes a user, as ``User.check_change`` reads it (the data layer's
    ``Access`` is one; security sits below data and does not name it)."""

    @property
    def permissions(self) -> "Permissions": ...
    @property
    def session(self) -> Mapping[str, str]: ...
    @property
    def tenant(self) -> str | None: ...

MIN_PASSWORD_LENGTH = 8
MAX_USERNAME_LENGTH = 200

# Letters and marks that show nothing (Unicode's default-ignorable ones that
# are not format characters, and the braille blank): refused like format
# (Cf) and control (Cc) characters, so no two usernames differ invisibly.
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0") | frozenset(
    map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]))
_REFUSED_CATEGORIES = ("C", "Zl", "Zp")    # control, format, private use, unassigned; line breaks


def canonical_username(text: object) -> str:
    """The one form a username is stored, compared and signed in with: NFKC
    (fullwidth and other compatibility forms become plain ones), trimmed, runs
    of spaces as one. ValueError, saying why, for a name no user may have:
    empty, too long, or with invisible or control characters. Names compare
    case-sensitively, as sign-in does (``Admin`` is not ``admin``)."""
    name = unicodedata.normalize("NFKC", text if isinstance(text, str) else "")
    if any(ch in _INVISIBLE or unicodedata.category(ch).startswith(_REFUSED_CATEGORIES)
           for ch in name):
        raise ValueError("must not contain invisible or control characters")
    name = " ".join(name.split())
    if not 1 <= len(name) <= MAX_USERNAME_LENGTH:
        raise ValueError(f"size must be between 1 and {MAX_USERNAME_LENGTH}")
    return name


def reaches(granted: frozenset[str], role_codes: Sequence[str]) -> bool:
    """Whether a caller holding the role codes ``granted`` reaches a holder of
    ``role_codes``: it holds each of them (``system-full-access`` holds them all)."""
    return SYSTEM_FULL_ACCESS.code in granted or set(role_codes) <= granted


def lookup_name(text: str) -> str:
    """The name to look a user up by: canonical, or the text as given when no
    user can have it (so it finds nobody, at the same cost)."""
    try:
        return canonical_username(text)
    except ValueError:
        return text


@entity(name="User", instance_name="username", secret=("password", "roles"), tenant=True)
class User(Entity):
    username = peewee.CharField(max_length=200, unique=True)
    firstName = peewee.CharField(max_length=200, null=True)
    lastName = peewee.CharField(max_length=200, null=True)
    email = peewee.CharField(max_length=200, null=True)
    active = peewee.BooleanField(default=True)
    locale = peewee.CharField(max_length=32, null=True)
    # The user's tenant (security/tenants.py); None: a global user. Declared
    # here, so usernames stay unique across tenants (sign-in names one user).
    tenantId = peewee.CharField(max_length=TENANT_KEY_LENGTH, null=True, index=True)
    password = peewee.CharField(max_length=255, null=True)   # None: cannot sign in
    roles = peewee.TextField(default="")

    class Meta:
        table_name = "restsvc_user"

    @property
    def role_codes(self) -> tuple[str, ...]:
        return tuple(code for code in (self.roles or "").split(",") if code)

    @classmethod
    def clean(cls, values: dict[str, Any], creating: bool,
              user_id: object) -> list[tuple[str, str]]:
        """Called by the importer with what a REST create or update writes,
        before the validators: usernames in their canonical form, and no id
        chosen by the client for a new user (the service assigns them, so the
        nil id of client tokens and a deleted user's id never name a user)."""
        refused: list[tuple[str, str]] = []
        if creating and user_id is not None:
            refused.append(("id", "must not be set: the service assigns the ids of users"))
        if values.get("username") is not None:
            try:
                values["username"] = canonical_username(values["username"])
            except ValueError as exc:
                refused.append(("username", str(exc)))
        return refused

    @classmethod
    def check_change(cls, access: Changer, user_id: object,
                     values: dict[str, Any] | None) -> None:
        """Called by the data manager before a REST update (``values``: what it
        writes) or delete (``values`` None) of a user. ``user-management`` must
        not reach above the caller's own roles: no change to a user who holds a
        role the caller does not hold (``system-full-access`` holds them all),
        and no new username for the caller itself (rules and other systems may
        know a caller by its username). Roles themselves are never written here.
        A tenant's administrator (a caller with a tenant: it reaches only its
        tenant's users) may disable or enable any of them: ``active`` alone
        hands no one a right."""
        user = cls.get_or_none(cls.id == user_id)
        if user is None:
            return
        switching = access.tenant is not None and values is not None and set(values) <= {"active"}
        if not switching and not reaches(access.permissions.granted, user.role_codes):
            raise Forbidden("Forbidden", f"User {user.username} holds roles you do not hold")
        renamed = values is not None and values.get("username", user.username) != user.username
        if renamed and str(user.id) == access.session.get("userId"):
            raise Forbidden("Forbidden", "You may not change your own username")

    # Called by the data manager inside the transaction of every REST change, and
    # by the CLI: a disabled or deleted user's tokens and API keys die with the
    # change; a renamed user's tokens too (they name the user by its old
    # username; its keys follow the user by id).
    def after_save(self, created: bool) -> None:
        if not self.active:
            TokenStore.revoke_user(self.id)
            revoke_user_keys(self.id)
        elif not created:
            TokenStore.follow_user(self.id, self.username, self.locale)

    def after_delete(self) -> None:
        TokenStore.revoke_user(self.id)
        revoke_user_keys(self.id)


def _check_password(password: str | None) -> None:
    if not password or len(password) < MIN_PASSWORD_LENGTH:
        raise BadRequest("Invalid password",
                         f"A password needs at least {MIN_PASSWORD_LENGTH} characters")


def _joined(role_codes: Sequence[str]) -> str:
    return ",".join(dict.fromkeys(role_codes))


class Users:
    def __init__(self, roles: RoleRegistry) -> None:
        self.roles = roles

    def authenticate(self, username: str, password: str) -> User | None:
        """The active user whose password matches (and whose tenant, if any, is
        enabled), else None. Unknown, inactive and password-less users cost the
        same as a real check at today's hashing cost."""
        user: User | None = User.select().where(User.username == lookup_name(username)).first()
        stored = user.password if user is not None and user.password else None
        stored = stored if stored and is_hash(stored) else None
        matches = verify_at_cost(stored or DECOY, password, clients.ITERATIONS)
        if user is None or not user.active or not stored or not matches:
            return None
        if user.tenantId is not None and not TenantDirectory.is_enabled(user.tenantId):
            return None     # a disabled tenant's users do not sign in
        return user

    def identity(self, user: User, client_id: str, scope: str | None = None) -> Identity:
        """What the tokens of this user's sign-in through this client carry."""
        resource, row_level = self.roles.split(user.role_codes)
        return Identity(client_id, user.username, str(user.id), user.locale, resource, row_level,
                        scope)

    @staticmethod
    def tenant_of(user_id: str) -> str | None:
        """The user's tenant (security/tenants.py), None for a global user."""
        found = User.select(User.tenantId).where(User.id == user_id).tuples().first()
        return found[0] if found else None

    def info(self, user_id: object) -> JsonObject:
        """``userInfo`` attributes: every plain attribute of the user, secrets excluded."""
        user = User.get_or_none(User.id == user_id) if user_id else None
        if user is None:
            return {}
        meta = self.roles.metadata.of_model(User)
        assert meta is not None         # the built-in User is an entity of every application
        attributes: JsonObject = {}
        for name, prop in meta.properties.items():
            # A DATATYPE property always has its datatype.
            if prop.attribute_type == "DATATYPE" and prop.persistent and prop.datatype is not None:
                value = getattr(user, name)
                attributes[name] = None if value is None else prop.datatype.to_json(value)
        return attributes

    # Administration (CLI). Each change goes through save() and the same hooks the
    # data manager calls, inside one transaction.

    def _check_roles(self, role_codes: Sequence[str]) -> None:
        unknown = [code for code in role_codes if code not in self.roles]
        if unknown:
            raise BadRequest("Unknown role", f"Unknown role code(s): {', '.join(unknown)}")

    def add(self, username: str, password: str | None = None,
            role_codes: Sequence[str] = (), tenant: str | None = None) -> User:
        try:
            username = canonical_username(username)
        except ValueError as exc:
            raise BadRequest("Invalid username", f"A username {exc}") from None
        self._check_roles(role_codes)
        if password is not None:
            _check_password(password)
        with write_transaction(User._meta.database):
            if User.select().where(User.username == username).exists():
                raise Conflict("User exists", f"User {username} already exists")
            if tenant is not None and not Tenant.select().where(Tenant.tenantId == tenant).exists():
                raise NotFound("Tenant not found", f"Tenant {tenant} not found")
            user = User(username=username, roles=_joined(role_codes), tenantId=tenant,
                        password=hash_secret(password) if password is not None else None)
            user.save(force_insert=True)
            user.after_save(created=True)
        return user

    def get(self, username: str) -> User:
        user: User | None = User.select().where(User.username == lookup_name(username)).first()
        if user is None:
            raise NotFound("User not found", f"User {username} not found")
        return user

    def _change(self, username: str, sign_out: bool = True, **values: object) -> None:
        """Change a user through the hooks. Tokens carry what was true at sign-in
        (roles, password), so by default they end."""
        with write_transaction(User._meta.database):
            user = self.get(username)
            for name, value in values.items():
                setattr(user, name, value)
            user.save()
            user.after_save(created=False)
            if sign_out:
                TokenStore.revoke_user(user.id)

    def set_password(self, username: str, password: str) -> None:
        """A new password ends the user's sign-ins and its API keys: whoever
        knew the old one may have made them."""
        _check_password(password)
        with write_transaction(User._meta.database):
            self._change(username, password=hash_secret(password))
            revoke_user_keys(self.get(username).id)

    def set_roles(self, username: str, role_codes: Sequence[str]) -> None:
        self._check_roles(role_codes)
        self._change(username, roles=_joined(role_codes))

    def set_active(self, username: str, active: bool) -> None:
        # after_save itself revokes a disabled user's tokens.
        self._change(username, sign_out=False, active=active)
