"""Settings: one YAML file plus environment overrides, typed and frozen.

Keys keep the spec's names (``svc.rest.default-max-fetch-size``). The YAML may
nest them or write them dotted; both flatten to the same dotted key. Anything
unknown or malformed stops startup with a message that names the key.
"""
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from . import values as parse
from .paths import SETTINGS as PATH_SETTINGS, Paths, paths_from
from .settinggroups import (CLIENT_PREFIX, DOCS_PREFIX, JWT_PREFIX, STORAGE_PREFIX,
                            WEBHOOK_PREFIX, ApiInfo, ClientSettings, JwtIssuerSettings, Keys,
                            ObjectStorageSettings, Parsed, Raw, WebhookSettings, api_info,
                            clients, jwt_issuers, object_storages, parse_value, webhooks)
from .values import SettingsError

__all__ = ["SettingsError", "Settings", "build_settings", "load_settings"]


DEFAULT_CONFIG = "config/restsvc.yaml"

# Environment variables a deployment uses instead of editing the file.
ENVIRONMENT = {
    "RESTSVC_DATABASE_URL": "svc.datasource.url",
    "RESTSVC_SECRET_KEY": "svc.secret-key",
    "RESTSVC_FILE_STORAGE_DIR": "svc.file-storage.dir",
    "RESTSVC_DATA_DIR": "svc.data-dir",
}


# key -> (attribute name, parser, default)
_KEYS: Keys = {
    "svc.application": ("application", parse.text, "restsvc.demo:application"),
    "svc.data-dir": ("data_dir", parse.text, "var"),
    "svc.datasource.url": ("database_url", parse.text, ""),
    "svc.datasource.pool-size": ("database_pool_size", parse.positive_int, 20),
    "svc.datasource.init-schema": ("init_schema", parse.boolean, True),
    "svc.datasource.sqlite-synchronous": (
        "sqlite_synchronous", parse.one_of("full", "normal"), "full"),
    "svc.datasource.sqlite-wal-limit": ("sqlite_wal_limit", parse.size, 64 << 20),
    "svc.demo-data": ("demo_data", parse.boolean, False),
    "svc.secret-key": ("secret_key", parse.text, ""),
    "svc.file-storage.dir": ("file_storage_dir", parse.text, ""),
    "svc.file-storage.default": ("default_file_storage", parse.text, "fs"),
    "svc.health.live-path": ("health_live_path", parse.url_path, "/health/live"),
    "svc.health.ready-path": ("health_ready_path", parse.url_path, "/health/ready"),
    "svc.health.timeout": ("health_timeout", parse.duration, 3),
    # How long the entity log keeps items; 0 (empty): forever (`restsvc history prune`).
    "svc.history.retention": ("history_retention", parse.optional_duration, 0),
    # Change events (restsvc/events/): how long the outbox keeps them, the feed's limits.
    "svc.events.retention": ("events_retention", parse.duration, 7 * 86400),
    "svc.events.max-streams-per-worker": ("events_max_streams", parse.positive_int, 8),
    "svc.events.max-stream-share-per-caller": ("events_caller_share", parse.share, 0.5),
    "svc.events.streams-in-serve": ("events_streams_in_serve", parse.boolean, True),
    "svc.events.max-streams": ("events_max_streams_instance", parse.positive_int, 10_000),
    "svc.events.stream-buffer": ("events_stream_buffer", parse.size, 1 << 20),
    "svc.events.keepalive": ("events_keepalive", parse.duration, 20),
    "svc.events.poll-interval": ("events_poll_interval", parse.milliseconds, 0.5),
    "svc.events.stream-poll-interval": ("events_stream_poll_interval", parse.milliseconds, 0.1),
    "svc.events.ticket-lifetime": ("events_ticket_lifetime", parse.duration, 60),
    # Webhooks (restsvc/events/webhooks.py, delivery.py).
    "svc.webhooks.retry-initial-delay": (
        "webhooks_retry_initial_delay", parse.milliseconds, 10.0),
    "svc.webhooks.retry-period": ("webhooks_retry_period", parse.duration, 86400),
    "svc.webhooks.timeout": ("webhooks_timeout", parse.duration, 10),
    "svc.webhooks.allow-private-addresses": ("webhooks_allow_private", parse.boolean, False),
    "svc.webhooks.deliver-in-serve": ("webhooks_deliver_in_serve", parse.boolean, True),
    "svc.webhooks.max-parallel-deliveries": ("webhooks_max_parallel", parse.positive_int, 8),
    # Tenants (restsvc/docs/tenants.md "Global callers").
    "svc.tenants.default": ("default_tenant", parse.text, ""),
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
    "svc.rest.import-max-size": ("import_max_size", parse.size, 100 << 20),
    "svc.rest.import-max-errors": ("import_max_errors", parse.positive_int, 100),
    "svc.rest.max-change-rows": ("max_change_rows", parse.positive_int, 1000),
    "svc.rest.max-batch-operations": ("max_batch_operations", parse.positive_int, 100),
    "svc.reports.dir": ("reports_dir", parse.text, "reports"),
    "svc.reports.max-rows": ("reports_max_rows", parse.positive_int, 1_000_000),
    # Ranked full-text search (schema/fulltext.py): PostgreSQL's stemming; English stems on SQLite.
    "svc.search.language": ("search_language", parse.text_search_language, "english"),
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
    "svc.metrics.tenant-label": ("metrics_tenant_label", parse.boolean, False),
    "svc.log.format": ("log_format", parse.one_of("plain", "json"), "plain"),
    "svc.log.requests": ("log_requests", parse.boolean, False),
    "svc.log.slow-statement": ("slow_statement", parse.milliseconds, 0.0),
    "svc.tracing.enabled": ("tracing", parse.boolean, False),
}

# svc.rate-limit.client.<client id>, svc.rate-limit.user.<username> and
# svc.rate-limit.key.<API key id>: "100/s burst 200"
_RATE_LIMIT_PREFIX = "svc.rate-limit."

# Per-entity override: svc.rest.entity-max-fetch-size.<entityName>
_ENTITY_FETCH_SIZE = "svc.rest.entity-max-fetch-size."

@dataclass(frozen=True)
class Settings:
    base_dir: Path
    application: str
    data_dir: str
    database_url: str
    database_pool_size: int
    init_schema: bool
    sqlite_synchronous: str
    sqlite_wal_limit: int
    demo_data: bool
    secret_key: str
    file_storage_dir: str
    default_file_storage: str
    health_live_path: str
    health_ready_path: str
    health_timeout: int
    history_retention: int
    available_locales: tuple[str, ...]
    messages_dir: str
    default_max_fetch_size: int
    optimistic_locking: bool
    inline_fetch_plans: bool
    response_fetch_plans: bool
    inline_file_extensions: tuple[str, ...]
    max_file_size: int
    max_request_size: int
    queries_config: str
    services_config: str
    max_fetch_plan_depth: int
    max_response_entities: int
    max_bulk_size: int
    import_max_size: int
    import_max_errors: int
    max_change_rows: int
    max_batch_operations: int
    reports_dir: str
    reports_max_rows: int
    search_language: str
    authenticated_url_patterns: tuple[str, ...]
    anonymous_url_patterns: tuple[str, ...]
    realm: str
    auth_max_failures: int
    auth_address_max_failures: int
    auth_failure_window: int
    signin_template: str
    cors_allowed_origins: tuple[str, ...]
    cors_allowed_methods: tuple[str, ...]
    cors_allowed_headers: tuple[str, ...]
    cors_exposed_headers: tuple[str, ...]
    cors_allow_credentials: bool
    cors_max_age: int
    trusted_proxies: tuple[str, ...]
    public_url: str
    metrics_path: str
    metrics_client_label: bool
    metrics_tenant_label: bool
    log_format: str
    log_requests: bool
    slow_statement: float
    tracing: bool
    idempotency_expiry: int = 86400
    entity_max_fetch_size: dict[str, int] = field(default_factory=dict)
    clients: tuple[ClientSettings, ...] = ()
    object_storages: tuple[ObjectStorageSettings, ...] = ()
    # ("client"|"user", name) -> (requests per second, burst)
    rate_limits: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    jwt_issuers: tuple[JwtIssuerSettings, ...] = ()
    paths: Paths = Paths()      # svc.rest.base-path, svc.rest.*-path, svc.authserver.base-path
    events_retention: int = 7 * 86400
    events_max_streams: int = 8
    events_caller_share: float = 0.5
    events_streams_in_serve: bool = True
    events_max_streams_instance: int = 10_000
    events_stream_buffer: int = 1 << 20
    events_keepalive: int = 20
    events_poll_interval: float = 0.5
    events_stream_poll_interval: float = 0.1
    events_ticket_lifetime: int = 60
    webhooks_retry_initial_delay: float = 10.0
    webhooks_retry_period: int = 86400
    webhooks_timeout: int = 10
    webhooks_allow_private: bool = False
    webhooks_deliver_in_serve: bool = True
    webhooks_max_parallel: int = 8
    default_tenant: str = ""    # a global caller's create that names no tenant goes here ("": 400)
    webhooks: tuple[WebhookSettings, ...] = ()        # subscriptions of the settings (settinggroups.webhooks)
    source: str = ""            # the settings file's absolute path ("": built in code)
    api_info: ApiInfo = ApiInfo()   # svc.rest.docs.*: the API's identity in the documents

    @property
    def default_locale(self) -> str:
        return self.available_locales[0]

    def path(self, value: str | Path) -> Path:
        """A configured path; relative ones are relative to the config file."""
        return (self.base_dir / value).resolve()

    def max_fetch_size(self, entity_name: str) -> int:
        return self.entity_max_fetch_size.get(entity_name, self.default_max_fetch_size)


def flatten(tree: Mapping[str, object], prefix: str = "") -> Raw:
    """Nested and dotted YAML mappings -> {dotted key: leaf value}."""
    flat: Raw = {}
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


def build_settings(values: Mapping[str, object] | None, base_dir: str | Path = ".",
                   environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from a mapping (nested or dotted) plus environment overrides."""
    flat = flatten(values or {})
    for variable, key in ENVIRONMENT.items():
        if environ and environ.get(variable):
            flat[key] = environ[variable]
    parsed: Parsed = {"base_dir": Path(base_dir).resolve(), "entity_max_fetch_size": {}}
    client_values: Raw = {}
    storage_values: Raw = {}
    jwt_values: Raw = {}
    path_values: dict[str, str] = {}
    webhook_values: Raw = {}
    docs_values: Raw = {}
    for key, value in flat.items():
        if key in PATH_SETTINGS:
            path_values[PATH_SETTINGS[key][0]] = parse_value(key, parse.url_path, value)
        elif key in _KEYS:
            attr, parser, _ = _KEYS[key]
            parsed[attr] = parse_value(key, parser, value)
        elif key.startswith(_ENTITY_FETCH_SIZE) and len(key) > len(_ENTITY_FETCH_SIZE):
            entity = key[len(_ENTITY_FETCH_SIZE):]
            parsed["entity_max_fetch_size"][entity] = parse_value(key, parse.positive_int, value)
        elif key.startswith(CLIENT_PREFIX):
            client_values[key] = value
        elif key.startswith(STORAGE_PREFIX):
            storage_values[key] = value
        elif key.startswith(_RATE_LIMIT_PREFIX):
            kind, _, name = key[len(_RATE_LIMIT_PREFIX):].partition(".")
            if kind not in ("client", "user", "key", "tenant") or not name:
                raise SettingsError(f"{key}: unknown setting (svc.rate-limit.client.<client id>, "
                                    f"svc.rate-limit.user.<username>, "
                                    f"svc.rate-limit.key.<API key id> or "
                                    f"svc.rate-limit.tenant.<tenant key>)")
            parsed.setdefault("rate_limits", {})[(kind, name)] = parse_value(key, parse.rate_limit, value)
        elif key.startswith(JWT_PREFIX):
            jwt_values[key] = value
        elif key.startswith(WEBHOOK_PREFIX):
            webhook_values[key] = value
        elif key.startswith(DOCS_PREFIX):
            docs_values[key] = value
        else:
            raise SettingsError(f"{key}: unknown setting")
    parsed["paths"] = paths_from(path_values)
    problem = parsed["paths"].check()
    if problem:
        raise SettingsError(problem)
    if "authenticated_url_patterns" not in parsed:
        # The default protects the REST API wherever svc.rest.base-path puts it.
        parsed["authenticated_url_patterns"] = (f"{parsed['paths'].base}/**", "/api/**")
    for _key, (attr, _, default) in _KEYS.items():
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
    parsed["clients"] = clients(client_values)
    parsed["object_storages"] = object_storages(storage_values)
    parsed["jwt_issuers"] = jwt_issuers(jwt_values)
    parsed["webhooks"] = webhooks(webhook_values)
    parsed["api_info"] = api_info(docs_values)
    names = ["fs"] + [storage.name for storage in parsed["object_storages"]]
    if parsed["default_file_storage"] not in names:
        raise SettingsError(f"svc.file-storage.default: {parsed['default_file_storage']!r} is "
                            f"not a configured storage ({', '.join(names)})")
    for key in ("svc.events.poll-interval", "svc.events.stream-poll-interval",
                "svc.webhooks.retry-initial-delay"):
        if parsed[_KEYS[key][0]] <= 0:
            raise SettingsError(f"{key}: must be more than 0")
    if parsed["health_live_path"] == parsed["health_ready_path"]:
        raise SettingsError("svc.health.ready-path: must differ from svc.health.live-path")
    return Settings(**parsed)


def config_path(path: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> Path:
    """The settings file: ``path``, ``$RESTSVC_CONFIG`` or the default."""
    environ = os.environ if environ is None else environ
    return Path(path or environ.get("RESTSVC_CONFIG") or DEFAULT_CONFIG)


def load_settings(path: str | Path | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Read the YAML file named by ``path``, ``$RESTSVC_CONFIG`` or the default."""
    environ = os.environ if environ is None else environ
    file = config_path(path, environ)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"cannot read configuration file {file}: {exc.strerror}") from None
    try:
        values = yaml.safe_load(text) or {}
    except (yaml.YAMLError, ValueError) as exc:     # ValueError: an integer of too many digits
        raise SettingsError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(values, dict):
        raise SettingsError(f"{file}: the top level must be a mapping of settings")
    settings = build_settings(values, base_dir=file.parent, environ=environ)
    return replace(settings, source=str(file.resolve()))
