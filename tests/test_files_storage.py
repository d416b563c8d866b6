"""Local file storage: atomic writes, temporary files, instances sharing a directory."""
import os
import time

import pytest
from werkzeug.test import Client

from conftest import at_once, make_settings
from files_support import download, stored_files, temp_files, uploaded_ref
from restsvc.app import RestApp
from restsvc.files.refs import parse_file_ref
from restsvc.files.storage import STALE_TEMP_SECONDS, LocalFileStorage
from restsvc.settings import SettingsError


def test_file_appears_under_its_name_only_when_completely_written(tmp_path):
    storage = LocalFileStorage(tmp_path / "files")
    seen_while_writing = []

    def chunks():
        yield b"first half "
        seen_while_writing.append((sorted(_final_files(storage)), len(os.listdir(storage.temp_dir))))
        yield b"second half"
    stored = storage.write(chunks(), "doc.txt")
    assert seen_while_writing == [([], 1)]
    assert _final_files(storage) == [stored.ref.path] and os.listdir(storage.temp_dir) == []
    with storage.open(stored.ref) as f:
        assert f.read() == b"first half second half"


def _final_files(storage):
    return [os.path.relpath(os.path.join(d, f), storage.root)
            for d, dirs, files in os.walk(storage.root) if ".tmp" not in d for f in files]


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt(), SystemExit(1)])
def test_failed_write_leaves_neither_a_file_nor_a_temporary_file(tmp_path, failure):
    storage = LocalFileStorage(tmp_path / "files")

    def chunks():
        yield b"x" * 100_000
        raise failure
    with pytest.raises(type(failure)):
        storage.write(chunks(), "doc.txt")
    assert _final_files(storage) == [] and os.listdir(storage.temp_dir) == []


def test_storage_error_during_upload_is_a_json_500_and_leaves_nothing(app, client, auth,
                                                                     monkeypatch):
    def failing_fsync(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    response = client.post("/rest/files?name=a.txt", data=b"content", headers=auth)
    assert response.status_code == 500
    assert response.json == {"error": "Server error",
                             "details": f"Request id {response.headers['X-Request-Id']}"}
    assert stored_files(app) == [] and temp_files(app) == []


def test_stale_temporary_files_are_swept_at_startup_and_fresh_ones_kept(tmp_path):
    root = tmp_path / "files"
    LocalFileStorage(root)
    stale, fresh = root / ".tmp" / "upload-old.part", root / ".tmp" / "upload-new.part"
    stale.write_bytes(b"left by a killed worker")
    fresh.write_bytes(b"still being written by another instance")
    old = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(stale, (old, old))
    LocalFileStorage(root)
    assert sorted(os.listdir(root / ".tmp")) == ["upload-new.part"]


def test_delete_removes_the_file_once(tmp_path):
    storage = LocalFileStorage(tmp_path / "files")
    stored = storage.write([b"x"], "x.bin")
    assert storage.delete(stored.ref) is True
    assert storage.delete(stored.ref) is False
    with pytest.raises(FileNotFoundError):
        storage.stat(stored.ref)


def test_unusable_storage_directory_stops_startup_naming_the_setting(database_url, tmp_path):
    (tmp_path / "a-file").write_text("not a directory")
    settings = make_settings(database_url, tmp_path,
                             {"svc.file-storage.dir": str(tmp_path / "a-file" / "files")})
    with pytest.raises(SettingsError, match="svc.file-storage.dir"):
        RestApp(settings)


def test_storage_directory_comes_from_the_setting(make_app, tmp_path, auth):
    app = make_app({"svc.file-storage.dir": str(tmp_path / "elsewhere")})
    ref = uploaded_ref(Client(app), auth)
    assert (tmp_path / "elsewhere" / parse_file_ref(ref).path).is_file()


def test_instances_sharing_a_directory_never_collide_and_see_each_others_files(make_app, auth):
    apps = [make_app(), make_app()]
    refs = [[], []]

    def upload_many(index):
        client = Client(apps[index])
        for n in range(15):
            refs[index].append((uploaded_ref(client, auth, f"{index}-{n}".encode()), f"{index}-{n}"))
    at_once(upload_many, 2)
    all_refs = refs[0] + refs[1]
    assert len({ref for ref, _ in all_refs}) == 30
    for index, own in enumerate(refs):
        other = Client(apps[1 - index])
        for ref, content in own:
            assert download(other, auth, ref).data == content.encode()


SECRET = b"top secret outside the storage"
TRAVERSALS = [
    "fs://../secret.txt?name=a", "fs://../../secret.txt?name=a", "fs://2024/../../secret.txt?name=a",
    "fs:///etc/passwd?name=a", "fs:///{outside}/secret.txt?name=a", "fs://{outside}/secret.txt?name=a",
    "fs://..%2fsecret.txt?name=a", "fs://%2e%2e/secret.txt?name=a", "fs://%2E%2E%2Fsecret.txt?name=a",
    "fs://..\\secret.txt?name=a", "fs://2024\\..\\..\\secret.txt?name=a", "fs://.\\./secret.txt?name=a",
    "fs://secret.txt%00.png?name=a", "fs://secret.txt\x00.png?name=a", "fs://./secret.txt?name=a",
    "fs://2024//../secret.txt?name=a", "fs://link/secret.txt?name=a", "fs://link-file?name=a",
    "fs://.tmp/upload-x.part?name=a", "fs://~/secret.txt?name=a", "fs://C:/secret.txt?name=a",
    "fs://.?name=a", "fs://..?name=a", "fs://2024?name=a",
]


def test_reference_never_reaches_outside_the_storage_directory(app, client, auth):
    root = app.files.default.root
    outside = os.path.dirname(root)
    with open(os.path.join(outside, "secret.txt"), "wb") as f:
        f.write(SECRET)
    os.symlink(outside, os.path.join(root, "link"))
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "link-file"))
    os.makedirs(os.path.join(root, "2024"))
    answers = {}
    for template in TRAVERSALS:
        text = template.format(outside=outside.lstrip("/"))
        response = download(client, auth, text)
        answers[text] = (response.status_code, response.json and response.json["error"])
        assert SECRET not in response.data, text
    assert {answer for answer in answers.values()} <= {
        (400, "Invalid file reference"), (404, "File not found")}, answers
