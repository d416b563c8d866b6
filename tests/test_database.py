"""The database as set up by restsvc: durable commits by default, declared indexes."""
import pytest

from restsvc.app import RestApp

from conftest import make_settings


def sqlite_app(tmp_path, overrides=None):
    settings = make_settings(f"sqlite:///{tmp_path / 'durable.db'}", tmp_path,
                             {"svc.demo-data": False, **(overrides or {})})
    return RestApp(settings)


def synchronous_level(app):
    try:
        return app.database.execute_sql("PRAGMA synchronous").fetchone()[0]
    finally:
        app.database.close()


def test_sqlite_commits_are_durable_by_default(tmp_path):
    assert synchronous_level(sqlite_app(tmp_path)) == 2       # FULL: the WAL is synced per commit


def test_sqlite_synchronous_setting_trades_durability_for_speed(tmp_path):
    app = sqlite_app(tmp_path, {"svc.datasource.sqlite-synchronous": "normal"})
    assert synchronous_level(app) == 1                        # NORMAL: synced at checkpoints


def test_sqlite_synchronous_setting_rejects_other_words(tmp_path):
    from restsvc.settings import SettingsError
    with pytest.raises(SettingsError, match="svc.datasource.sqlite-synchronous"):
        sqlite_app(tmp_path, {"svc.datasource.sqlite-synchronous": "off"})
