"""``restsvc backup`` and ``restsvc restore``: an online, consistent archive of
the database and the fs file storage, restored only into an empty database
and storage and only when every checksum matches."""
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
import time

import pytest
import yaml
from werkzeug.test import Client

from conftest import PG_URL, REPO, get_token, http, make_settings
from files_support import download, upload_raw
from restsvc.app import RestApp
from restsvc.cli import main
from restsvc.settings import load_settings
from schema_support import database_url as empty_database_url
from schema_support import shop  # noqa: F401  (the fixture)
from servers import _write_config


def run_cli(capsys, config, *arguments):
    """(exit code, stdout + stderr) of one restsvc command run in this process."""
    code = main(["--config", str(config), *arguments])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def source_config(tmp_path, database_url):
    """Settings of the test's own app (its database, its data dir and so its fs storage)."""
    return _write_config(_folder(tmp_path / "source"), database_url,
                         {"svc.data-dir": str(tmp_path)})


def _folder(path):
    path.mkdir(parents=True, exist_ok=True)
    return path


class Target:
    """An empty database and file storage to restore into."""

    def __init__(self, directory, url):
        self.directory, self.url = directory, url
        self.config = _write_config(directory, url, {"svc.datasource.init-schema": False})
        self.files = directory / "files"

    def app(self):
        return RestApp(make_settings(self.url, self.directory), check_schema=True)

    def tables(self):
        app = RestApp(make_settings(self.url, self.directory, {
            "svc.datasource.init-schema": False}), check_schema=False)
        try:
            return app.database.get_tables()
        finally:
            _close(app)

    def stored(self):
        return sorted(os.path.relpath(os.path.join(d, f), self.files)
                      for d, dirs, names in os.walk(self.files) if ".tmp" not in d
                      for f in names)


def _close(app):
    getattr(app.database, "close_all", app.database.close)()


@pytest.fixture
def target(tmp_path):
    directory = _folder(tmp_path / "target")
    with empty_database_url(directory) as url:
        yield Target(directory, url)


def backup(capsys, config, output):
    code, text = run_cli(capsys, config, "backup", "--output", str(output))
    assert code == 0, text
    return output


def customer_count(app):
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    response = client.get("/rest/entities/Customer?returnCount=true&limit=1", headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return int(response.headers["X-Total-Count"])


def missing_customers(app, ids):
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    return [id_ for id_ in ids
            if client.get(f"/rest/entities/Customer/{id_}", headers=auth).status_code != 200]


# --- consistency under writes -------------------------------------------------

def test_backup_under_concurrent_writes_restores_every_write_answered_before_it_began(
        start_servers, tmp_path, target, capsys):
    base_url, = start_servers(1, workers=2)
    config = tmp_path / "server-0" / "server.yaml"
    status, body = http("POST", f"{base_url}/oauth2/token", b"grant_type=client_credentials", {
        "Authorization": "Basic ZGVtby1jbGllbnQ6ZGVtby1zZWNyZXQ=",
        "Content-Type": "application/x-www-form-urlencoded"})
    headers = {"Authorization": f"Bearer {json.loads(body)['access_token']}",
               "Content-Type": "application/json"}
    acknowledged, failures, stop = [], [], threading.Event()

    def write(worker):
        number = 0
        while not stop.is_set():
            number += 1
            status, body = http("POST", f"{base_url}/rest/entities/Customer", json.dumps(
                {"name": f"writer {worker} {number}", "grade": "GOLD"}).encode(), headers)
            if status == 201:
                acknowledged.append((time.monotonic(), json.loads(body)["id"]))
            else:
                failures.append((status, body))

    writers = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for writer in writers:
        writer.start()
    try:
        while len(acknowledged) < 30:
            time.sleep(0.05)
        began = time.monotonic()
        before = {id_ for _, id_ in acknowledged}
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "restsvc.cli", "--config", str(config),
                               "backup", "--output", str(tmp_path / "live.tar")], env=env,
                              capture_output=True, text=True, timeout=120)
        ended = time.monotonic()
        time.sleep(0.2)
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert done.returncode == 0, done.stderr
    assert not failures
    assert any(began < at < ended for at, _ in acknowledged), "the service kept answering"
    assert stat.S_IMODE(os.stat(tmp_path / "live.tar").st_mode) == 0o600

    code, text = run_cli(capsys, target.config, "restore", str(tmp_path / "live.tar"))
    assert code == 0, text
    code, text = run_cli(capsys, target.config, "migrate", "--status")
    assert code == 0 and text.strip().endswith("up to date"), text
    app = target.app()
    try:
        assert missing_customers(app, before) == []
    finally:
        _close(app)


# --- files, modes, refusals ---------------------------------------------------

def test_restore_brings_the_fs_files_back_byte_for_byte(client, auth, app, database_url,
                                                         tmp_path, target, capsys):
    contents = [os.urandom(200_000), b"", b"plain text\n"]
    refs = [upload_raw(client, auth, content, f"f{n}.bin").json["fileRef"]
            for n, content in enumerate(contents)]
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "files.tar.gz")

    code, text = run_cli(capsys, target.config, "restore", str(archive))
    assert code == 0, text
    restored = target.app()
    try:
        restored_client = Client(restored)
        headers = {"Authorization": f"Bearer {get_token(restored_client)}"}
        for ref, content in zip(refs, contents):
            response = download(restored_client, headers, ref)
            assert response.status_code == 200 and response.data == content
    finally:
        _close(restored)
    source_files = tmp_path / "files"
    assert target.stored() == sorted(
        os.path.relpath(os.path.join(d, f), source_files)
        for d, _, names in os.walk(source_files) if ".tmp" not in d for f in names)
    for path in target.stored():
        assert (target.files / path).read_bytes() == (source_files / path).read_bytes()


def test_backup_file_is_owner_only_whatever_the_umask(app, database_url, tmp_path, capsys):
    previous = os.umask(0)
    try:
        archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(archive).st_mode) == 0o600
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_backup_never_overwrites_an_existing_file(app, database_url, tmp_path, capsys):
    existing = tmp_path / "b.tar"
    existing.write_bytes(b"keep me")
    code, text = run_cli(capsys, source_config(tmp_path, database_url), "backup", "--output",
                         str(existing))
    assert code == 1 and "exists already" in text
    assert existing.read_bytes() == b"keep me"


def test_restore_refuses_a_database_that_is_not_empty(app, database_url, tmp_path, capsys):
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")
    before = customer_count(app)
    code, text = run_cli(capsys, source_config(tmp_path, database_url), "restore", str(archive))
    assert code == 1 and "database of svc.datasource.url is not empty" in text, text
    assert customer_count(app) == before


def test_restore_refuses_a_file_storage_that_is_not_empty(app, database_url, tmp_path, target,
                                                          capsys):
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")
    (target.files / "2020").mkdir(parents=True)
    (target.files / "2020" / "old.bin").write_bytes(b"there before")
    code, text = run_cli(capsys, target.config, "restore", str(archive))
    assert code == 1 and "file storage" in text and "is not empty" in text, text
    assert target.tables() == []
    assert target.stored() == ["2020/old.bin"]


def _rewrite(archive, output, change, extra=()):
    """A copy of ``archive`` with ``change(name, bytes) -> bytes`` applied to
    each member, and the (name, bytes) of ``extra`` added."""
    with tarfile.open(archive) as source, tarfile.open(output, "w") as copy:
        for info in source:
            data = change(info.name, source.extractfile(info).read())
            info.size = len(data)
            copy.addfile(info, io.BytesIO(data))
        for name, data in extra:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            copy.addfile(info, io.BytesIO(data))
    return output


@pytest.mark.parametrize("damaged", ["database", "files"])
def test_restore_refuses_an_archive_whose_checksums_do_not_match_and_writes_nothing(
        client, auth, app, database_url, tmp_path, target, capsys, damaged):
    upload_raw(client, auth, b"original content", "a.txt")
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")

    def flip(name, data):
        if name.startswith(damaged) and data:
            return bytes([data[0] ^ 1]) + data[1:]
        return data
    bad = _rewrite(archive, tmp_path / "bad.tar", flip)
    code, text = run_cli(capsys, target.config, "restore", str(bad))
    assert code == 1 and "does not match its checksum" in text, text
    assert target.tables() == []
    assert target.stored() == []
    assert not os.listdir(target.files / ".tmp")


def test_restore_refuses_a_file_path_that_leaves_the_storage(app, database_url, tmp_path,
                                                             target, capsys):
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")
    name, data = "files/../../escaped.txt", b"outside"

    def escape(member, content):   # listed with its true checksum: only the path is wrong
        if member != "manifest.json":
            return content
        manifest = json.loads(content)
        manifest["files"]["paths"].append(name[len("files/"):])
        manifest["members"][name] = {"sha256": hashlib.sha256(data).hexdigest(),
                                     "size": len(data)}
        return json.dumps(manifest).encode()
    bad = _rewrite(archive, tmp_path / "bad.tar", escape, [(name, data)])
    code, text = run_cli(capsys, target.config, "restore", str(bad))
    assert code == 1 and "not a plain path" in text, text
    assert not (target.directory / "escaped.txt").exists()
    assert target.tables() == [] and target.stored() == []


def test_restore_refuses_a_file_that_is_not_a_backup(tmp_path, target, capsys):
    not_a_backup = tmp_path / "photo.tar"
    not_a_backup.write_bytes(os.urandom(4096))
    code, text = run_cli(capsys, target.config, "restore", str(not_a_backup))
    assert code == 1 and text.startswith("restsvc: restore: cannot read"), text
    code, text = run_cli(capsys, target.config, "restore", str(tmp_path / "missing.tar"))
    assert code == 1 and "cannot read" in text, text
    assert target.tables() == []


# --- an older schema ----------------------------------------------------------

AUTHOR = """
@entity(instance_name="name")
class Author(Entity):
    name = peewee.CharField(max_length=50)
"""


def test_restore_of_a_backup_older_than_the_model_migrates_it(
        shop, tmp_path, target, capsys):  # noqa: F811  (shop: the fixture imported above)
    shop.declare(AUTHOR)
    client, auth = shop.client(shop.app(init_schema=True))
    for name in ("Ann", "Bob"):
        assert client.post("/rest/entities/Author", json={"name": name},
                           headers=auth).status_code == 201
    archive = backup(capsys, shop.config, tmp_path / "v1.tar")
    shop.declare(AUTHOR + "    country = peewee.CharField(null=True)\n")
    config = yaml.safe_load(shop.config.read_text())
    config["svc"]["datasource"]["url"] = target.url
    config["svc"]["data-dir"] = str(target.directory)
    restore_config = target.directory / "shop.yaml"
    restore_config.write_text(yaml.safe_dump(config))

    code, text = run_cli(capsys, restore_config, "restore", str(archive))
    assert code == 0, text
    code, text = run_cli(capsys, restore_config, "migrate", "--status")
    assert code == 0 and text.strip().endswith("up to date"), text
    app = RestApp(load_settings(restore_config))      # the start-up check passes
    try:
        client = Client(app)
        token = client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                            headers={"Authorization": "Basic dDpz"}).json["access_token"]
        response = client.get("/rest/entities/Author?sort=name",
                              headers={"Authorization": f"Bearer {token}"})
        assert [(a["name"], a.get("country")) for a in response.json] == [
            ("Ann", None), ("Bob", None)]
    finally:
        _close(app)


def test_restore_refuses_a_backup_of_the_other_database_engine(app, database_url, tmp_path,
                                                               target, capsys):
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")

    def other_engine(member, content):
        if member != "manifest.json":
            return content
        manifest = json.loads(content)
        manifest["engine"] = "sqlite" if manifest["engine"] == "postgresql" else "postgresql"
        return json.dumps(manifest).encode()
    bad = _rewrite(archive, tmp_path / "other.tar", other_engine)
    code, text = run_cli(capsys, target.config, "restore", str(bad))
    assert code == 1 and "database; svc.datasource.url names a" in text, text
    assert target.tables() == []


@pytest.mark.skipif(bool(PG_URL), reason="SQLite's table rebuild writes a copy first")
def test_the_copy_migrate_writes_before_a_table_rebuild_is_owner_only(
        shop, capsys):  # noqa: F811  (shop: the fixture imported above)
    shop.declare(AUTHOR)
    shop.app(init_schema=True)
    shop.declare(AUTHOR.replace("max_length=50", "max_length=80"))
    previous = os.umask(0)
    try:
        code, output = shop.migrate(capsys=capsys)
    finally:
        os.umask(previous)
    assert code == 0, output
    copy = output.split("backup written first: ")[1].split()[0]
    assert stat.S_IMODE(os.stat(copy).st_mode) == 0o600


def test_backup_of_a_database_that_does_not_answer_says_so(tmp_path, capsys):
    config = _write_config(_folder(tmp_path / "down"),
                           "postgresql://postgres@127.0.0.1:1/restsvc", {})
    code, text = run_cli(capsys, config, "backup", "--output", str(tmp_path / "b.tar"))
    assert code == 1 and text.startswith("restsvc: backup: database error:"), text
    assert "Traceback" not in text and not (tmp_path / "b.tar").exists()


def test_restore_of_rows_the_database_refuses_writes_nothing(app, database_url, tmp_path, target,
                                                            capsys):
    archive = backup(capsys, source_config(tmp_path, database_url), tmp_path / "b.tar")
    garbage = b"not\ta row of\tthis table\n" * 100
    members = {"database/restsvc.sqlite", "database/customer.copy"}

    def refused(member, content):     # damaged before the checksums were taken
        if member in members:
            return garbage
        if member != "manifest.json":
            return content
        manifest = json.loads(content)
        for name in members & set(manifest["members"]):
            manifest["members"][name] = {"sha256": hashlib.sha256(garbage).hexdigest(),
                                         "size": len(garbage)}
        return json.dumps(manifest).encode()
    bad = _rewrite(archive, tmp_path / "refused.tar", refused)
    code, text = run_cli(capsys, target.config, "restore", str(bad))
    assert code == 1 and "nothing was restored" in text and "Traceback" not in text, text
    assert target.tables() == [] and target.stored() == []
