"""Helpers for the Files API tests: uploads in both options, what is on disk."""
import io
import os

from restsvc.files.storage import TEMP_DIR


def upload_raw(client, headers, content=b"hello files", name="notes.txt",
               content_type="text/plain", **kwargs):
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
    """Relative paths of the finished files in the app's storage."""
    root = app.files.default.root
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != TEMP_DIR]
        found += [os.path.relpath(os.path.join(directory, f), root) for f in files]
    return sorted(found)


def temp_files(app):
    return sorted(os.listdir(app.files.default.temp_dir))


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
