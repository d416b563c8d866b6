"""Settings: one YAML file plus environment overrides, typed and frozen.

Keys keep the spec's names (``svc.rest.default-max-fetch-size``). The YAML may
nest them or write them dotted; both flatten to the same dotted key. Anything
unknown or malformed stops startup with a message that names the key.
"""
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import values as parse


class SettingsError(Exception):
    """A configuration problem found at startup; the message names the key."""


DEFAULT_CONFIG = "config/restsvc.yaml"

# Environment variables a deployment uses instead of editing the file.
ENVIRONMENT = {
    "RESTSVC_DATABASE_URL": "svc.datasource.url",
    "RESTSVC_SECRET_KEY": "svc.secret-key",
    "RESTSVC_FILE_STORAGE_DIR": "svc.file-storage.dir",
    "RESTSVC_DATA_DIR": "svc.data-dir",
}


# key -> (attribute name, parser, default)
_KEYS = {
    "svc.application": ("application", parse.text, "restsvc.demo:application"),
    "svc.data-dir": ("data_dir", parse.text, "var"),
    "svc.datasource.url": ("database_url", parse.text, ""),
    "svc.datasource.pool-size": ("database_pool_size", parse.positive_int, 20),
    "svc.datasource.init-schema": ("init_schema", parse.boolean, True),
    "svc.datasource.sqlite-synchronous": (
        "sqlite_synchronous", parse.one_of("full", "normal"), "full"),
    "svc.demo-data": ("demo_data", parse.boolean, False),
    "svc.secret-key": ("secret_key", parse.text, ""),
    "svc.file-storage.dir": ("file_storage_dir", parse.text, ""),
    "svc.file-storage.default": ("default_file_storage", parse.text, "fs"),
    "svc.health.live-path": ("health_live_path", parse.url_path, "/health/live"),
    "svc.health.ready-path": ("health_ready_path", parse.url_path, "/health/ready"),
    "svc.health.timeout": ("health_timeout", parse.duration, 3),
    "svc.core.available-locales": ("available_locales", parse.word_list, ("en",)),
    "svc.core.messages-dir": ("messages_dir", parse.text, "messages"),
    "svc.rest.default-max-fetch-size": ("default_max_fetch_size", parse.positive_int, 10000),
    "svc.rest.optimistic-locking-enabled": ("optimistic_locking", parse.boolean, False),
    "svc.rest.idempotency-expiry": ("idempotency_expiry", parse.duration, 86400),
    "svc.rest.inline-fetch-plan-enabled": ("inline_fetch_plans", parse.boolean, True),
    "svc.rest.response-fetch-plan-enabled": ("response_fetch_plans", parse.boolean, True),
    "svc.rest.inline-enabled-file-extensions": (
        "inline_file_extensions", parse.extension_list, ("jpg", "png", "jpeg", "pdf")),
    "svc.rest.max-file-size": ("max_file_size", parse.size, 100 << 20),
    "svc.rest.max-request-size": ("max_request_size", parse.size, 10 << 20),
    "svc.rest.queries-config": ("queries_config", parse.text, ""),
    "svc.rest.services-config": ("services_config", parse.text, ""),
    "svc.rest.max-fetch-plan-depth": ("max_fetch_plan_depth", parse.positive_int, 6),
    "svc.rest.max-response-entities": ("max_response_entities", parse.positive_int, 100_000),
    "svc.rest.max-bulk-size": ("max_bulk_size", parse.positive_int, 1000),
    "svc.reports.dir": ("reports_dir", parse.text, "reports"),
    "svc.reports.max-rows": ("reports_max_rows", parse.positive_int, 1_000_000),
    "svc.resource-server.authenticated-url-patterns": (
        "authenticated_url_patterns", parse.url_path_pattern_list, ("/rest/**", "/api/**")),
    "svc.resource-server.anonymous-url-patterns": (
        "anonymous_url_patterns", parse.url_path_pattern_list, ()),
    "svc.resource-server.realm": ("realm", parse.text, "restsvc"),
    "svc.authserver.rate-limit.max-failures": ("auth_max_failures", parse.non_negative_int, 10),
    "svc.authserver.rate-limit.address-max-failures": (
        "auth_address_max_failures", parse.non_negative_int, 100),
    "svc.authserver.rate-limit.window": ("auth_failure_window", parse.duration, 300),
    "svc.authserver.signin-template": ("signin_template", parse.text, ""),
    "svc.cors.allowed-origins": ("cors_allowed_origins", parse.origin_list, ()),
    "svc.cors.allowed-methods": ("cors_allowed_methods", parse.token_list, ("*",)),
    "svc.cors.allowed-headers": ("cors_allowed_headers", parse.token_list, ("*",)),
    "svc.cors.exposed-headers": ("cors_exposed_headers", parse.token_list, ()),
    "svc.cors.allow-credentials": ("cors_allow_credentials", parse.boolean, False),
    "svc.cors.max-age": ("cors_max_age", parse.duration, 1800),
    "svc.trusted-proxies": ("trusted_proxies", parse.network_list, ()),
    "svc.public-url": ("public_url", parse.public_url, ""),
    "svc.metrics.path": ("metrics_path", parse.optional_url_path, ""),
    "svc.metrics.client-label": ("metrics_client_label", parse.boolean, False),
    "svc.log.format": ("log_format", parse.one_of("plain", "json"), "plain"),
    "svc.log.requests": ("log_requests", parse.boolean, False),
    "svc.log.slow-statement": ("slow_statement", parse.milliseconds, 0.0),
    "svc.tracing.enabled": ("tracing", parse.boolean, False),
}

# svc.rate-limit.client.<client id> and svc.rate-limit.user.<username>: "100/s burst 200"
_RATE_LIMIT_PREFIX = "svc.rate-limit."

# Per-entity override: svc.rest.entity-max-fetch-size.<entityName>
_ENTITY_FETCH_SIZE = "svc.rest.entity-max-fetch-size."

# svc.authserver.client.<name>.<key>
_CLIENT_PREFIX = "svc.authserver.client."
_CLIENT_KEYS = {
    "client-id": ("client_id", parse.text, None),
    "client-secret": ("client_secret", parse.text, ""),     # none: a public client
    "authorization-grant-types": ("grant_types", parse.word_list, ("client_credentials",)),
    "access-token-time-to-live": ("access_token_ttl", parse.duration, 300),
    "refresh-token-time-to-live": ("refresh_token_ttl", parse.duration, 3600),
    "resource-roles": ("resource_roles", parse.word_list, ()),
    "row-level-roles": ("row_level_roles", parse.word_list, ()),
    "redirect-uris": ("redirect_uris", parse.redirect_uri_list, ()),
    "scopes": ("scopes", parse.word_list, ()),
}
# What a client without a secret (a browser or mobile app) may use.
PUBLIC_CLIENT_GRANTS = ("authorization_code", "refresh_token")
# The scopes a client may be registered with; each narrows its tokens' roles
# (roles.py SCOPE_OPERATIONS).
KNOWN_SCOPES = ("read", "write")


# svc.resource-server.jwt.<name>.<key>: identity providers whose JWT access
# tokens are accepted (security/jwtissuers.py); role-mapping.<their role>: role codes.
_JWT_PREFIX = "svc.resource-server.jwt."
_JWT_KEYS = {
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
}
_ROLE_MAPPING = "role-mapping."
SYMMETRIC_ALGORITHMS = ("HS256", "HS384", "HS512")


# svc.file-storage.<name>.<key>: object storages beside the local "fs" one.
_STORAGE_PREFIX = "svc.file-storage."
_STORAGE_NAME = re.compile(r"[a-z][a-z0-9-]{0,30}\Z")     # a file reference's scheme
_STORAGE_KEYS = {
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
    grant_types: tuple
    access_token_ttl: int
    refresh_token_ttl: int
    resource_roles: tuple
    row_level_roles: tuple
    redirect_uris: tuple = ()
    scopes: tuple = ()

    @property
    def is_public(self):
        """No secret: a browser or mobile app, which cannot keep one."""
        return not self.client_secret


@dataclass(frozen=True)
class JwtIssuerSettings:
    name: str
    issuer: str
    jwks_uri: str
    audiences: tuple
    algorithms: tuple
    secret: str
    username_claim: str
    roles_claim: str
    client_claim: str
    role_mapping: dict = field(default_factory=dict)     # their role -> role codes


@dataclass(frozen=True)
class Settings:
    base_dir: Path
    application: str
    data_dir: str
    database_url: str
    database_pool_size: int
    init_schema: bool
    sqlite_synchronous: str
    demo_data: bool
    secret_key: str
    file_storage_dir: str
    default_file_storage: str
    health_live_path: str
    health_ready_path: str
    health_timeout: int
    available_locales: tuple
    messages_dir: str
    default_max_fetch_size: int
    optimistic_locking: bool
    inline_fetch_plans: bool
    response_fetch_plans: bool
    inline_file_extensions: tuple
    max_file_size: int
    max_request_size: int
    queries_config: str
    services_config: str
    max_fetch_plan_depth: int
    max_response_entities: int
    max_bulk_size: int
    reports_dir: str
    reports_max_rows: int
    authenticated_url_patterns: tuple
    anonymous_url_patterns: tuple
    realm: str
    auth_max_failures: int
    auth_address_max_failures: int
    auth_failure_window: int
    signin_template: str
    cors_allowed_origins: tuple
    cors_allowed_methods: tuple
    cors_allowed_headers: tuple
    cors_exposed_headers: tuple
    cors_allow_credentials: bool
    cors_max_age: int
    trusted_proxies: tuple
    public_url: str
    metrics_path: str
    metrics_client_label: bool
    log_format: str
    log_requests: bool
    slow_statement: float
    tracing: bool
    idempotency_expiry: int = 86400
    entity_max_fetch_size: dict = field(default_factory=dict)
    clients: tuple = ()
    object_storages: tuple = ()
    rate_limits: dict = field(default_factory=dict)     # ("client"|"user", name) -> (rate, burst)
    jwt_issuers: tuple = ()

    @property
    def default_locale(self):
        return self.available_locales[0]

    def path(self, value):
        """A configured path; relative ones are relative to the config file."""
        return (self.base_dir / value).resolve()

    def max_fetch_size(self, entity_name):
        return self.entity_max_fetch_size.get(entity_name, self.default_max_fetch_size)


def flatten(tree, prefix=""):
    """Nested and dotted YAML mappings -> {dotted key: leaf value}."""
    flat = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            for sub_key, sub_value in flatten(value, dotted + ".").items():
                if sub_key in flat:
                    raise SettingsError(f"{sub_key}: given twice")
                flat[sub_key] = sub_value
        else:
            if dotted in flat:
                raise SettingsError(f"{dotted}: given twice")
            flat[dotted] = value
    return flat


def _parse(key, parser, value):
    try:
        return parser(value)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{key}: invalid value {value!r} ({exc})") from None


def _groups(raw, prefix, keys):
    """``<prefix><name>.<key>`` settings -> ``[(name, {attribute: parsed value})]``."""
    grouped = {}
    for key, value in raw.items():
        name, _, sub_key = key[len(prefix):].partition(".")
        if not name or sub_key not in keys:
            raise SettingsError(f"{key}: unknown setting")
        grouped.setdefault(name, {})[sub_key] = value
    groups = []
    for name, values in sorted(grouped.items()):
        parsed = {"name": name}
        for sub_key, (attr, parser, default) in keys.items():
            key = f"{prefix}{name}.{sub_key}"
            if sub_key in values:
                parsed[attr] = _parse(key, parser, values[sub_key])
            elif default is None:
                raise SettingsError(f"{key}: required")
            else:
                parsed[attr] = default
        groups.append((name, parsed))
    return groups


def _clients(raw):
    clients = [ClientSettings(**parsed) for _, parsed in _groups(raw, _CLIENT_PREFIX, _CLIENT_KEYS)]
    for client in clients:
        key = f"{_CLIENT_PREFIX}{client.name}"
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
            raise SettingsError(f"{_CLIENT_PREFIX}*.client-id: {client_id!r} is registered twice")
    return tuple(clients)


def _object_storages(raw):
    storages = []
    for name, parsed in _groups(raw, _STORAGE_PREFIX, _STORAGE_KEYS):
        prefix = f"{_STORAGE_PREFIX}{name}"
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


def _jwt_issuers(raw):
    """JWT issuers; ``role-mapping.<role>`` keys are taken apart first (any role name)."""
    mappings, plain = {}, {}
    for key, value in raw.items():
        name, _, sub_key = key[len(_JWT_PREFIX):].partition(".")
        if sub_key.startswith(_ROLE_MAPPING) and len(sub_key) > len(_ROLE_MAPPING):
            codes = _parse(key, parse.word_list, value)
            mappings.setdefault(name, {})[sub_key[len(_ROLE_MAPPING):]] = codes
        else:
            plain[key] = value
    unnamed = set(mappings) - {key[len(_JWT_PREFIX):].partition(".")[0] for key in plain}
    if unnamed:
        raise SettingsError(f"{_JWT_PREFIX}{sorted(unnamed)[0]}.issuer: required")
    issuers = []
    for name, parsed in _groups(plain, _JWT_PREFIX, _JWT_KEYS):
        key = f"{_JWT_PREFIX}{name}"
        if "none" in (alg.lower() for alg in parsed["algorithms"]):
            raise SettingsError(f"{key}.algorithms: 'none' (unsigned tokens) is never accepted")
        symmetric = [alg for alg in parsed["algorithms"] if alg in SYMMETRIC_ALGORITHMS]
        if symmetric and not parsed["secret"]:
            raise SettingsError(f"{key}.algorithms: {symmetric[0]} needs {key}.secret")
        if len(symmetric) < len(parsed["algorithms"]) and not parsed["jwks_uri"]:
            raise SettingsError(f"{key}.jwks-uri: required for public-key algorithms")
        issuers.append(JwtIssuerSettings(**parsed, role_mapping=mappings.get(name, {})))
    return tuple(issuers)


def build_settings(values, base_dir=".", environ=None):
    """Settings from a mapping (nested or dotted) plus environment overrides."""
    flat = flatten(values or {})
    for variable, key in ENVIRONMENT.items():
        if (environ or {}).get(variable):
            flat[key] = environ[variable]
    parsed = {"base_dir": Path(base_dir).resolve(), "entity_max_fetch_size": {}}
    client_values = {}
    storage_values = {}
    jwt_values = {}
    for key, value in flat.items():
        if key in _KEYS:
            attr, parser, _ = _KEYS[key]
            parsed[attr] = _parse(key, parser, value)
        elif key.startswith(_ENTITY_FETCH_SIZE) and len(key) > len(_ENTITY_FETCH_SIZE):
            entity = key[len(_ENTITY_FETCH_SIZE):]
            parsed["entity_max_fetch_size"][entity] = _parse(key, parse.positive_int, value)
        elif key.startswith(_CLIENT_PREFIX):
            client_values[key] = value
        elif key.startswith(_STORAGE_PREFIX):
            storage_values[key] = value
        elif key.startswith(_RATE_LIMIT_PREFIX):
            kind, _, name = key[len(_RATE_LIMIT_PREFIX):].partition(".")
            if kind not in ("client", "user") or not name:
                raise SettingsError(f"{key}: unknown setting (svc.rate-limit.client.<client id> "
                                    f"or svc.rate-limit.user.<username>)")
            parsed.setdefault("rate_limits", {})[(kind, name)] = _parse(key, parse.rate_limit, value)
        elif key.startswith(_JWT_PREFIX):
            jwt_values[key] = value
        else:
            raise SettingsError(f"{key}: unknown setting")
    for key, (attr, _, default) in _KEYS.items():
        parsed.setdefault(attr, default)
    if not parsed["secret_key"]:
        raise SettingsError("svc.secret-key: required (or set RESTSVC_SECRET_KEY)")
    if len(parsed["secret_key"]) < 16:
        raise SettingsError("svc.secret-key: must be at least 16 characters")
    if parsed["cors_allow_credentials"] and "*" in parsed["cors_allowed_origins"]:
        raise SettingsError("svc.cors.allow-credentials: cannot be true while "
                            "svc.cors.allowed-origins is * (name the origins)")
    if not parsed["database_url"]:
        parsed["database_url"] = f"sqlite:///{parsed['data_dir']}/restsvc.db"
    if not parsed["file_storage_dir"]:
        parsed["file_storage_dir"] = f"{parsed['data_dir']}/files"
    parsed["clients"] = _clients(client_values)
    parsed["object_storages"] = _object_storages(storage_values)
    parsed["jwt_issuers"] = _jwt_issuers(jwt_values)
    names = ["fs"] + [storage.name for storage in parsed["object_storages"]]
    if parsed["default_file_storage"] not in names:
        raise SettingsError(f"svc.file-storage.default: {parsed['default_file_storage']!r} is "
                            f"not a configured storage ({', '.join(names)})")
    if parsed["health_live_path"] == parsed["health_ready_path"]:
        raise SettingsError("svc.health.ready-path: must differ from svc.health.live-path")
    return Settings(**parsed)


def load_settings(path=None, environ=None):
    """Read the YAML file named by ``path``, ``$RESTSVC_CONFIG`` or the default."""
    environ = os.environ if environ is None else environ
    path = Path(path or environ.get("RESTSVC_CONFIG") or DEFAULT_CONFIG)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"cannot read configuration file {path}: {exc.strerror}") from None
    try:
        values = yaml.safe_load(text) or {}
    except (yaml.YAMLError, ValueError) as exc:     # ValueError: an integer of too many digits
        raise SettingsError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(values, dict):
        raise SettingsError(f"{path}: the top level must be a mapping of settings")
    return build_settings(values, base_dir=path.parent, environ=environ)
