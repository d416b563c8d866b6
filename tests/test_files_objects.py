"""S3-compatible file storage beside fs: settings, choosing a storage, an unreachable S3.
What both kinds promise alike is tested once for both (FILE_STORAGE_KINDS)."""
import pytest
from werkzeug.test import Client

from conftest import make_settings
from files_support import StorageView, download, upload_raw
from restsvc.app import RestApp
from restsvc.settings import SettingsError
from servers import free_port, new_bucket, object_storage_settings


def test_upload_goes_to_the_storage_named_by_storage_name_and_its_scheme_is_the_name(
        make_app, auth, s3_endpoint):
    bucket = new_bucket(s3_endpoint)
    app = make_app(object_storage_settings(s3_endpoint, bucket, name="archive", default=False))
    client = Client(app)
    local = upload_raw(client, auth, b"on disk", "a.txt").json["fileRef"]
    remote = client.post("/rest/files?name=b.txt&storageName=archive", data=b"in the bucket",
                         headers=auth).json["fileRef"]
    assert local.startswith("fs://") and remote.startswith("archive://")
    assert StorageView.of(app.files.get("archive")).stored() == [remote[10:remote.index("?")]]
    assert download(client, auth, local).data == b"on disk"
    assert download(client, auth, remote).data == b"in the bucket"


def test_unreachable_object_storage_is_503_without_endpoint_or_credentials(make_app, auth,
                                                                            s3_endpoint):
    closed = f"http://127.0.0.1:{free_port()}"
    client = Client(make_app(object_storage_settings(closed, "gone")))
    for response in (upload_raw(client, auth, b"x", "a.txt"),
                     download(client, auth, "objects://2024/01/01/a.txt?name=a.txt")):
        assert response.status_code == 503
        assert response.headers["Retry-After"]
        assert response.json["error"] == "File storage unavailable"
        assert "127.0.0.1" not in response.json["details"]
        assert "restsvc-test" not in response.get_data(as_text=True)


@pytest.mark.parametrize("values, message", [
    ({"svc.file-storage.objects.type": "s3"}, "svc.file-storage.objects.bucket: required"),
    ({"svc.file-storage.objects.type": "gcs", "svc.file-storage.objects.bucket": "b"},
     "svc.file-storage.objects.type: must be one of s3"),
    ({"svc.file-storage.fs.type": "s3", "svc.file-storage.fs.bucket": "b"}, "not 'fs'"),
    ({"svc.file-storage.Big.type": "s3", "svc.file-storage.Big.bucket": "b"}, "lowercase"),
    ({"svc.file-storage.default": "elsewhere"}, "svc.file-storage.default: 'elsewhere'"),
    ({"svc.file-storage.objects.type": "s3", "svc.file-storage.objects.bucket": "b",
      "svc.file-storage.objects.part-size": "1MB"}, "part-size: must be at least 5MB"),
    ({"svc.file-storage.objects.type": "s3", "svc.file-storage.objects.bucket": "b",
      "svc.file-storage.objects.colour": "red"}, "svc.file-storage.objects.colour: unknown"),
])
def test_object_storage_settings_are_checked_at_startup(tmp_path, values, message):
    with pytest.raises(SettingsError, match=message):
        make_settings("sqlite:///unused.db", tmp_path, values)


def test_object_storage_needs_no_connection_to_start(database_url, tmp_path):
    """An instance starts while S3 is down; its readiness check says so."""
    closed = f"http://127.0.0.1:{free_port()}"
    app = RestApp(make_settings(database_url, tmp_path, object_storage_settings(closed, "b")))
    assert app.files.default.name == "objects"
