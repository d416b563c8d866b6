"""Settings: spec names, nested or dotted, environment overrides, clear errors."""
import pytest

from restsvc.settings import SettingsError, build_settings, load_settings

BASE = {"svc.secret-key": "a-test-secret-key-0123"}


def settings(values, environ=None):
    return build_settings({**BASE, **values}, environ=environ or {})


def test_nested_and_dotted_forms_are_the_same_setting():
    nested = settings({"svc": {"rest": {"default-max-fetch-size": 50}}})
    dotted = settings({"svc.rest.default-max-fetch-size": 50})
    mixed = settings({"svc.rest": {"default-max-fetch-size": 50}})
    assert nested.default_max_fetch_size == dotted.default_max_fetch_size == mixed.default_max_fetch_size == 50


def test_defaults_follow_the_reference():
    s = settings({})
    assert s.default_max_fetch_size == 10000
    assert s.authenticated_url_patterns == ("/rest/**", "/api/**")
    assert s.inline_file_extensions == ("jpg", "png", "jpeg", "pdf")
    assert s.database_url == "sqlite:///var/restsvc.db"
    assert s.file_storage_dir == "var/files"


def test_unknown_key_fails_naming_the_key():
    with pytest.raises(SettingsError, match=r"svc\.rest\.default-max-fetch-sise: unknown setting"):
        settings({"svc.rest.default-max-fetch-sise": 10})


@pytest.mark.parametrize("key, value, reason", [
    ("svc.rest.default-max-fetch-size", "lots", "svc.rest.default-max-fetch-size: invalid value"),
    ("svc.rest.default-max-fetch-size", 0, "must be at least 1"),
    ("svc.rest.optimistic-locking-enabled", "maybe", "expected true or false"),
    ("svc.rest.max-file-size", "100 parsecs", "expected a size"),
    ("svc.resource-server.authenticated-url-patterns", "rest/**", "must start with /"),
    ("svc.authserver.client.x.access-token-time-to-live", "soon", "expected a duration"),
    ("svc.authserver.rate-limit.max-failures", -1, "must be at least 0"),
    ("svc.authserver.rate-limit.address-max-failures", "many", "invalid value"),
    ("svc.authserver.rate-limit.window", "a while", "expected a duration"),
    ("svc.cors.allowed-origins", "app.example.com", "is not an origin"),
    ("svc.cors.allowed-origins", "https://app.example.com/", "is not an origin"),
    ("svc.cors.allowed-headers", "X-Ok, Not ok", "is not a method or header name"),
    ("svc.cors.max-age", "forever", "expected a duration"),
])
def test_malformed_values_fail_naming_the_key(key, value, reason):
    values = {key: value}
    if key.startswith("svc.authserver"):
        values.update({"svc.authserver.client.x.client-id": "x",
                       "svc.authserver.client.x.client-secret": "s"})
    with pytest.raises(SettingsError, match=reason) as info:
        settings(values)
    assert key in str(info.value)


def test_sizes_and_durations_read_like_the_spec_examples():
    s = settings({"svc.rest.max-file-size": "100MB",
                  "svc.authserver.client.x.client-id": "x",
                  "svc.authserver.client.x.client-secret": "s",
                  "svc.authserver.client.x.access-token-time-to-live": "5m"})
    assert s.max_file_size == 100 * 1024 * 1024
    assert s.clients[0].access_token_ttl == 300


def test_a_client_without_an_id_fails():
    with pytest.raises(SettingsError, match=r"svc\.authserver\.client\.x\.client-id: required"):
        settings({"svc.authserver.client.x.client-secret": "s"})


def test_secret_key_is_required():
    with pytest.raises(SettingsError, match="svc.secret-key: required"):
        build_settings({}, environ={})


def test_environment_overrides_the_file():
    s = settings({"svc.datasource.url": "sqlite:///from-file.db"}, environ={
        "RESTSVC_DATABASE_URL": "sqlite:///from-env.db",
        "RESTSVC_SECRET_KEY": "an-environment-secret-key",
        "RESTSVC_FILE_STORAGE_DIR": "/srv/files",
    })
    assert s.database_url == "sqlite:///from-env.db"
    assert s.secret_key == "an-environment-secret-key"
    assert s.file_storage_dir == "/srv/files"


def test_per_entity_fetch_size_override():
    s = settings({"svc.rest.entity-max-fetch-size.Order": 25})
    assert s.max_fetch_size("Order") == 25
    assert s.max_fetch_size("Customer") == 10000


def test_config_file_from_environment_variable(tmp_path):
    path = tmp_path / "custom.yaml"
    path.write_text("svc:\n  secret-key: file-secret-key-123456\n  rest:\n    default-max-fetch-size: 7\n")
    s = load_settings(environ={"RESTSVC_CONFIG": str(path)})
    assert s.default_max_fetch_size == 7


def test_unreadable_or_non_mapping_files_fail_clearly(tmp_path):
    with pytest.raises(SettingsError, match="cannot read configuration file"):
        load_settings(tmp_path / "missing.yaml", environ={})
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(SettingsError, match="must be a mapping"):
        load_settings(path, environ={})
    path.write_text("svc: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        load_settings(path, environ={})


def test_unknown_role_on_a_client_fails_at_startup(make_app):
    with pytest.raises(SettingsError, match=r"svc\.authserver\.client\.demo: unknown role code 'no-such-role'"):
        make_app({"svc.authserver.client.demo.resource-roles": "rest-minimal, no-such-role"})


def test_unsupported_database_url_fails(make_app):
    with pytest.raises(SettingsError, match="svc.datasource.url: unsupported database URL scheme"):
        make_app({"svc.datasource.url": "mongodb://localhost/x"})
