"""Helpers for the Files API tests: uploads in both options, what is stored.

The file tests run once per storage kind: a module marked ``FILE_STORAGE_KINDS``
gets every test with the local ``fs`` storage and with an S3-compatible one
(moto's server, started once per session; each test its own bucket). What a
test asks about the storage (finished files, unfinished uploads) is answered
for either kind by ``StorageView``.
"""
import io
import os

import pytest

from restsvc.files.storage import TEMP_DIR, LocalFileStorage
from servers import new_bucket, object_storage_settings, s3_server, s3_server_missing

FILE_STORAGE_KINDS = pytest.mark.parametrize("file_storage", ["fs", "s3"], indirect=True)


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    missing = s3_server_missing()
    if missing:
        pytest.skip(missing)
    try:
        with s3_server(tmp_path_factory.mktemp("s3")) as endpoint:
            yield endpoint
    except RuntimeError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def file_storage(request):
    """Settings of the default file storage: {} for fs, an S3 bucket of its own for s3."""
    if getattr(request, "param", "fs") == "fs":
        return {}
    endpoint = request.getfixturevalue("s3_endpoint")
    return object_storage_settings(endpoint, new_bucket(endpoint))


class StorageView:
    """Finished files (paths as in references) and unfinished uploads
    (temporary files, multipart uploads) of one storage."""

    def __init__(self, root=None, s3=None, bucket=None, prefix=""):
        self.root, self.s3, self.bucket, self.prefix = root, s3, bucket, prefix

    @classmethod
    def of(cls, storage):
        if isinstance(storage, LocalFileStorage):
            return cls(root=storage.root)
        return cls(s3=storage.s3, bucket=storage.bucket, prefix=storage.prefix)

    @classmethod
    def from_settings(cls, data_dir, settings):
        if not settings:
            return cls(root=os.path.join(data_dir, "files"))
        import boto3
        values = {key.rpartition(".")[2]: value for key, value in settings.items()}
        return cls(s3=boto3.client("s3", endpoint_url=values["endpoint"], region_name="us-east-1"),
                   bucket=values["bucket"], prefix=values["key-prefix"])

    def stored(self):
        if self.s3 is not None:
            pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
            return sorted(item["Key"][len(self.prefix):] for page in pages
                          for item in page.get("Contents", ()))
        found = []
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != TEMP_DIR]
            found += [os.path.relpath(os.path.join(directory, f), self.root) for f in files]
        return sorted(found)

    def pending(self):
        if self.s3 is not None:
            answer = self.s3.list_multipart_uploads(Bucket=self.bucket)
            return sorted(upload["Key"] for upload in answer.get("Uploads", ()))
        return sorted(os.listdir(os.path.join(self.root, TEMP_DIR)))


def upload_raw(client, headers, content=b"hello files", name="notes.txt",
               content_type="application/octet-stream", **kwargs):
    query = {} if name is None else {"name": name}
    return client.post("/rest/files", query_string=query, data=content,
                       headers={**headers, "Content-Type": content_type}, **kwargs)


def upload_multipart(client, headers, content=b"hello files", filename="notes.txt", query=None,
                     fields=None):
    data = dict(fields or {})
    data["file"] = (io.BytesIO(content), filename)
    return client.post("/rest/files", query_string=query or {}, data=data, headers=headers)


def uploaded_ref(client, headers, content=b"hello files", name="notes.txt"):
    response = upload_raw(client, headers, content, name)
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.json["fileRef"]


def download(client, headers, ref, extra_headers=None, **query):
    return client.get("/rest/files", query_string={"fileRef": ref, **query},
                      headers={**headers, **(extra_headers or {})})


def stored_files(app):
    """Paths of the finished files in the app's default storage."""
    return StorageView.of(app.files.default).stored()


def temp_files(app):
    """Unfinished uploads: temporary files, or multipart uploads not completed nor aborted."""
    return StorageView.of(app.files.default).pending()


def assert_nothing_stored(app):
    assert stored_files(app) == [] and temp_files(app) == []


class _TestStream(io.RawIOBase):
    """The test client measures a stream by seeking; these report size 0 and
    the tests declare the length they want."""

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=io.SEEK_SET):
        return 0

    def tell(self):
        return 0


class BrokenStream(_TestStream):
    """A request body whose connection breaks after ``good`` bytes."""

    def __init__(self, good):
        super().__init__()
        self.left = good

    def readinto(self, buffer):
        if self.left <= 0:
            raise ConnectionResetError("peer went away")
        n = min(len(buffer), self.left)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


class UnreadableStream(_TestStream):
    """A request body that must not be read at all."""

    def readinto(self, buffer):
        raise AssertionError("the body was read")
