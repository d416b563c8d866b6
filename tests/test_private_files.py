"""Files restsvc writes that hold secrets are readable by their owner alone
(0600), whatever the umask lets through: the SQLite database (password and
token hashes), its -wal and -shm files, and the backup ``migrate`` writes."""
import os
import re
import stat

import pytest
from werkzeug.test import Client

from conftest import PG_URL, close_app, get_token, make_settings
from restsvc.app import RestApp
from schema_support import shop as shop  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(bool(PG_URL), reason="SQLite's files")


@pytest.fixture
def open_umask():
    """The umask most systems start with: it lets 0644 through."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path):
    return oct(stat.S_IMODE(os.stat(path).st_mode))


def test_the_sqlite_database_and_its_wal_and_shm_files_are_private(tmp_path, open_umask):
    path = tmp_path / "data" / "new.db"
    app = RestApp(make_settings(f"sqlite:///{path}", tmp_path, {"svc.demo-data": True}))
    try:
        client = Client(app)
        get_token(client)              # a write: the WAL holds it until a checkpoint
        files = [path, path.with_name("new.db-wal"), path.with_name("new.db-shm")]
        assert all(file.exists() for file in files), sorted(os.listdir(path.parent))
        assert {str(file.name): mode(file) for file in files} == {
            file.name: oct(0o600) for file in files}
    finally:
        close_app(app)


def test_a_database_file_that_is_there_keeps_its_mode(tmp_path, open_umask, database_url):
    """Only a file restsvc creates is made private: an operator's choice for
    an existing one (a group that backs it up) stays."""
    path = database_url.removeprefix("sqlite:///")
    os.chmod(path, 0o640)
    app = RestApp(make_settings(database_url, tmp_path))
    close_app(app)
    assert mode(path) == oct(0o640)


def test_the_backup_migrate_writes_is_private(shop, capsys, open_umask):
    shop.declare("""
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50)
""")
    shop.app(init_schema=True)
    shop.declare("""
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=80)
""")
    code, output = shop.migrate(capsys=capsys)
    assert code == 0, output
    backup = re.search(r"backup written first: (\S+)", output).group(1)
    assert mode(backup) == oct(0o600)
