"""Settings that come in named groups, ``<prefix><name>.<key>``: OAuth
clients, object storages, and the identity providers whose JWTs are accepted.
Each group is parsed into a frozen dataclass and checked as a whole."""
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import values as parse
from .values import SettingsError

_T = TypeVar("_T")
# A setting's key -> (attribute, parser, default; None: required).
Keys = dict[str, tuple[str, Callable[[object], object], object]]
# A raw value of the settings file (YAML scalar or list) or of the environment.
Raw = dict[str, object]
# Attribute name -> parsed value, given to a frozen dataclass whose fields say
# each value's type (the parsers of its Keys make them so).
Parsed = dict[str, Any]

# svc.authserver.client.<name>.<key>
CLIENT_PREFIX = "svc.authserver.client."
_CLIENT_KEYS: Keys = {
    "client-id": ("client_id", parse.text, None),
    "client-secret": ("client_secret", parse.text, ""),     # none: a public client
    "authorization-grant-types": ("grant_types", parse.word_list, ("client_credentials",)),
    "access-token-time-to-live": ("access_token_ttl", parse.duration, 300),
    "refresh-token-time-to-live": ("refresh_token_ttl", parse.duration, 3600),
    "resource-roles": ("resource_roles", parse.word_list, ()),
    "row-level-roles": ("row_level_roles", parse.word_list, ()),
    "redirect-uris": ("redirect_uris", parse.redirect_uri_list, ()),
    "scopes": ("scopes", parse.word_list, ()),
    "tenant": ("tenant", parse.text, ""),      # its tokens act for this tenant (docs/tenants.md)
}
# What a client without a secret (a browser or mobile app) may use.
PUBLIC_CLIENT_GRANTS = ("authorization_code", "refresh_token")
# The scopes a client may be registered with; each narrows its tokens' roles
# (security/scopes.py: what each keeps).
KNOWN_SCOPES = ("read", "write")


# svc.resource-server.jwt.<name>.<key>: identity providers whose JWT access
# tokens are accepted (security/jwtissuers.py); role-mapping.<their role>: role codes.
JWT_PREFIX = "svc.resource-server.jwt."
_JWT_KEYS: Keys = {
    "issuer": ("issuer", parse.text, None),
    "jwks-uri": ("jwks_uri", parse.text, ""),
    "audiences": ("audiences", parse.word_list, None),
    "algorithms": ("algorithms", parse.word_list,
                   ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                    "ES512", "EdDSA")),
    "secret": ("secret", parse.text, ""),
    "username-claim": ("username_claim", parse.text, "sub"),
    "roles-claim": ("roles_claim", parse.text, "roles"),
    "client-claim": ("client_claim", parse.text, "azp"),
    "tenant-claim": ("tenant_claim", parse.text, ""),      # none: global callers
}
_ROLE_MAPPING = "role-mapping."
SYMMETRIC_ALGORITHMS = ("HS256", "HS384", "HS512")


# svc.webhooks.subscription.<name>.<key>: webhook subscriptions of the settings
# (restsvc/events/webhooks.py), beside those registered through /rest/webhooks.
WEBHOOK_PREFIX = "svc.webhooks.subscription."
_WEBHOOK_KEYS: Keys = {
    "url": ("url", parse.text, None),
    "entities": ("entities", parse.word_list, None),
    "kinds": ("kinds", parse.word_list, ("CREATE", "UPDATE", "DELETE")),
    "secret": ("secret", parse.text, None),
    "filter": ("filter", parse.text, ""),
}


# svc.file-storage.<name>.<key>: object storages beside the local "fs" one.
STORAGE_PREFIX = "svc.file-storage."
_STORAGE_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}\Z")     # a file reference's scheme
_STORAGE_KEYS: Keys = {
    "type": ("type", parse.text, None),
    "bucket": ("bucket", parse.text, None),
    "endpoint": ("endpoint", parse.text, ""),
    "region": ("region", parse.text, "us-east-1"),
    "key-prefix": ("key_prefix", parse.text, ""),
    "addressing-style": ("addressing_style", parse.text, "auto"),
    "part-size": ("part_size", parse.size, 8 << 20),
}
STORAGE_TYPES = ("s3",)
MIN_PART_SIZE = 5 << 20        # S3's smallest part but the last


# svc.rest.docs.<key>: the API's identity in the OpenAPI documents and on the
# docs page (svc.rest.docs-path is where the page is).
DOCS_PREFIX = "svc.rest.docs."
_DOCS_KEYS: Keys = {
    "title": ("title", parse.text, ""),
    "description": ("description", parse.text, ""),
    "version": ("version", parse.text, ""),
    "contact.name": ("contact_name", parse.text, ""),
    "contact.url": ("contact_url", parse.web_url, ""),
    "contact.email": ("contact_email", parse.email, ""),
    "license.name": ("license_name", parse.text, ""),
    "license.url": ("license_url", parse.web_url, ""),
    "license.identifier": ("license_identifier", parse.text, ""),
    "servers": ("servers", parse.server_url_list, ()),
}
_SPDX = re.compile(r"[A-Za-z0-9.+-]{1,64}( (AND|OR|WITH) [A-Za-z0-9.+-]{1,64})*\Z")
MAX_TITLE = 200


@dataclass(frozen=True)
class ApiInfo:
    """What the documents say about the API; ``""``: the default (the title
    restsvc writes, the application's version)."""
    title: str = ""
    description: str = ""
    version: str = ""
    contact_name: str = ""
    contact_url: str = ""
    contact_email: str = ""
    license_name: str = ""
    license_url: str = ""
    license_identifier: str = ""
    servers: tuple[str, ...] = ()

    def info(self, title: str, description: str, version: str) -> dict[str, object]:
        """The documents' ``info`` object over these defaults."""
        info: dict[str, object] = {"title": self.title or title, "version": self.version or version,
                                   "description": self.description or description}
        contact = {key: value for key, value in (("name", self.contact_name),
                                                 ("url", self.contact_url),
                                                 ("email", self.contact_email)) if value}
        if contact:
            info["contact"] = contact
        if self.license_name:
            info["license"] = {"name": self.license_name,
                               **({"identifier": self.license_identifier}
                                  if self.license_identifier else {}),
                               **({"url": self.license_url} if self.license_url else {})}
        return info


def api_info(raw: Raw) -> ApiInfo:
    parsed: Parsed = {}
    for key, value in raw.items():
        sub_key = key[len(DOCS_PREFIX):]
        if sub_key not in _DOCS_KEYS:
            raise SettingsError(f"{key}: unknown setting (svc.rest.docs.: "
                                f"{', '.join(_DOCS_KEYS)})")
        attr, parser, _ = _DOCS_KEYS[sub_key]
        parsed[attr] = parse_value(key, parser, value)
    info = ApiInfo(**parsed)
    for name in ("title", "version"):
        if name in parsed and not str(parsed[name]).strip():
            raise SettingsError(f"{DOCS_PREFIX}{name}: must not be empty (leave it out for "
                                f"the default)")
    if len(info.title) > MAX_TITLE:
        raise SettingsError(f"{DOCS_PREFIX}title: at most {MAX_TITLE} characters")
    if (info.license_url or info.license_identifier) and not info.license_name:
        raise SettingsError(f"{DOCS_PREFIX}license.name: required with license.url or "
                            f"license.identifier")
    if info.license_url and info.license_identifier:
        raise SettingsError(f"{DOCS_PREFIX}license.identifier: give it or license.url, not "
                            f"both (OpenAPI 3.1)")
    if info.license_identifier and not _SPDX.match(info.license_identifier):
        raise SettingsError(f"{DOCS_PREFIX}license.identifier: an SPDX expression such as "
                            f"Apache-2.0 or MIT")
    return info


@dataclass(frozen=True)
class ObjectStorageSettings:
    name: str
    type: str
    bucket: str
    endpoint: str
    region: str
    key_prefix: str
    addressing_style: str
    part_size: int


@dataclass(frozen=True)
class ClientSettings:
    name: str
    client_id: str
    client_secret: str
    grant_types: tuple[str, ...]
    access_token_ttl: int
    refresh_token_ttl: int
    resource_roles: tuple[str, ...]
    row_level_roles: tuple[str, ...]
    redirect_uris: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    tenant: str = ""        # the tenant its client-credentials tokens act for ("": none)

    @property
    def is_public(self) -> bool:
        """No secret: a browser or mobile app, which cannot keep one."""
        return not self.client_secret


@dataclass(frozen=True)
class WebhookSettings:
    name: str
    url: str
    entities: tuple[str, ...]
    kinds: tuple[str, ...]
    secret: str
    filter: str = ""                # a filter's JSON text, or none (restsvc/events/matching.py)


@dataclass(frozen=True)
class JwtIssuerSettings:
    name: str
    issuer: str
    jwks_uri: str
    audiences: tuple[str, ...]
    algorithms: tuple[str, ...]
    secret: str
    username_claim: str
    roles_claim: str
    client_claim: str
    tenant_claim: str = ""          # the claim holding the caller's tenant key ("": none)
    role_mapping: dict[str, tuple[str, ...]] = field(default_factory=dict)     # their role -> role codes


def parse_value(key: str, parser: Callable[[object], _T], value: object) -> _T:
    try:
        return parser(value)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{key}: invalid value {value!r} ({exc})") from None


def _groups(raw: Raw, prefix: str, keys: Keys) -> list[tuple[str, Parsed]]:
    """``<prefix><name>.<key>`` settings -> ``[(name, {attribute: parsed value})]``."""
    grouped: dict[str, Raw] = {}
    for key, value in raw.items():
        name, _, sub_key = key[len(prefix):].partition(".")
        if not name or sub_key not in keys:
            raise SettingsError(f"{key}: unknown setting")
        grouped.setdefault(name, {})[sub_key] = value
    groups = []
    for name, values in sorted(grouped.items()):
        parsed: Parsed = {"name": name}
        for sub_key, (attr, parser, default) in keys.items():
            key = f"{prefix}{name}.{sub_key}"
            if sub_key in values:
                parsed[attr] = parse_value(key, parser, values[sub_key])
            elif default is None:
                raise SettingsError(f"{key}: required")
            else:
                parsed[attr] = default
        groups.append((name, parsed))
    return groups


def clients(raw: Raw) -> tuple[ClientSettings, ...]:
    clients = [ClientSettings(**parsed) for _, parsed in _groups(raw, CLIENT_PREFIX, _CLIENT_KEYS)]
    for client in clients:
        key = f"{CLIENT_PREFIX}{client.name}"
        if client.is_public and not set(client.grant_types) <= set(PUBLIC_CLIENT_GRANTS):
            raise SettingsError(f"{key}.authorization-grant-types: a client without a "
                                f"client-secret may only use {', '.join(PUBLIC_CLIENT_GRANTS)}")
        if "authorization_code" in client.grant_types and not client.redirect_uris:
            raise SettingsError(f"{key}.redirect-uris: required for authorization_code")
        unknown = [scope for scope in client.scopes if scope not in KNOWN_SCOPES]
        if unknown:
            raise SettingsError(f"{key}.scopes: unknown scope {unknown[0]!r} "
                                f"(known: {', '.join(KNOWN_SCOPES)})")
    ids = [client.client_id for client in clients]
    for client_id in ids:
        if ids.count(client_id) > 1:
            raise SettingsError(f"{CLIENT_PREFIX}*.client-id: {client_id!r} is registered twice")
    return tuple(clients)


def webhooks(raw: Raw) -> tuple[WebhookSettings, ...]:
    """Subscriptions of the settings; their URLs, entities and kinds are
    checked as a registration's are when the application starts."""
    return tuple(WebhookSettings(**parsed)
                 for _, parsed in _groups(raw, WEBHOOK_PREFIX, _WEBHOOK_KEYS))


def object_storages(raw: Raw) -> tuple[ObjectStorageSettings, ...]:
    storages = []
    for name, parsed in _groups(raw, STORAGE_PREFIX, _STORAGE_KEYS):
        prefix = f"{STORAGE_PREFIX}{name}"
        if name in ("fs", "dir", "default") or not _STORAGE_NAME.match(name):
            raise SettingsError(f"{prefix}: a storage name is lowercase letters, digits and '-' "
                                f"(it becomes a file reference's scheme) and not 'fs' (the "
                                f"local storage), 'dir' or 'default'")
        if parsed["type"] not in STORAGE_TYPES:
            raise SettingsError(f"{prefix}.type: must be one of {', '.join(STORAGE_TYPES)}")
        if parsed["addressing_style"] not in ("auto", "path", "virtual"):
            raise SettingsError(f"{prefix}.addressing-style: must be auto, path or virtual")
        if parsed["part_size"] < MIN_PART_SIZE:
            raise SettingsError(f"{prefix}.part-size: must be at least 5MB (S3's smallest part)")
        storages.append(ObjectStorageSettings(**parsed))
    return tuple(storages)


def jwt_issuers(raw: Raw) -> tuple[JwtIssuerSettings, ...]:
    """JWT issuers; ``role-mapping.<role>`` keys are taken apart first (any role name)."""
    mappings: dict[str, dict[str, tuple[str, ...]]] = {}
    plain: Raw = {}
    for key, value in raw.items():
        name, _, sub_key = key[len(JWT_PREFIX):].partition(".")
        if sub_key.startswith(_ROLE_MAPPING) and len(sub_key) > len(_ROLE_MAPPING):
            codes = parse_value(key, parse.word_list, value)
            mappings.setdefault(name, {})[sub_key[len(_ROLE_MAPPING):]] = codes
        else:
            plain[key] = value
    unnamed = set(mappings) - {key[len(JWT_PREFIX):].partition(".")[0] for key in plain}
    if unnamed:
        raise SettingsError(f"{JWT_PREFIX}{sorted(unnamed)[0]}.issuer: required")
    issuers = []
    for name, parsed in _groups(plain, JWT_PREFIX, _JWT_KEYS):
        key = f"{JWT_PREFIX}{name}"
        if "none" in (alg.lower() for alg in parsed["algorithms"]):
            raise SettingsError(f"{key}.algorithms: 'none' (unsigned tokens) is never accepted")
        symmetric = [alg for alg in parsed["algorithms"] if alg in SYMMETRIC_ALGORITHMS]
        if symmetric and not parsed["secret"]:
            raise SettingsError(f"{key}.algorithms: {symmetric[0]} needs {key}.secret")
        if len(symmetric) < len(parsed["algorithms"]) and not parsed["jwks_uri"]:
            raise SettingsError(f"{key}.jwks-uri: required for public-key algorithms")
        issuers.append(JwtIssuerSettings(**parsed, role_mapping=mappings.get(name, {})))
    return tuple(issuers)
