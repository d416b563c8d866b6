"""Files API, upload: both options, name rules, size limits, interrupted bodies."""
import io
import os
import re
from datetime import datetime, timezone
from urllib.parse import quote

from werkzeug.test import Client

import pytest

from files_support import (FILE_STORAGE_KINDS, BrokenStream, UnreadableStream,
                           assert_nothing_stored, download, stored_files, temp_files,
                           upload_multipart, upload_raw)
from restsvc.model.datatypes import DATATYPES

pytestmark = FILE_STORAGE_KINDS

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def test_raw_upload_stores_the_body_and_answers_201_with_the_file_reference(client, auth):
    response = upload_raw(client, auth, b"\x00\x01binary\xff", "data.bin",
                          "application/octet-stream")
    assert response.status_code == 201
    assert set(response.json) == {"fileRef", "name", "size"}
    assert response.json["name"] == "data.bin" and response.json["size"] == 9
    assert download(client, auth, response.json["fileRef"]).data == b"\x00\x01binary\xff"


@pytest.mark.parametrize("content, name, content_type", [
    (b"%PDF-1.4 report", "report 2026.pdf", "application/pdf"),
    (b"\x89PNG\r\n\x1a\n", "cat.png", "image/png"),
    (b'{"a": 1}', "data.json", "application/json"),
    (b"a=1&b=2", "form.txt", "application/x-www-form-urlencoded"),
    (b"plain", "notes.txt", "text/plain; charset=utf-8"),
])
def test_raw_body_of_the_files_own_type_is_the_file(client, auth, content, name, content_type):
    response = upload_raw(client, auth, content, name, content_type)
    assert response.status_code == 201, response.json
    assert response.json["name"] == name and response.json["size"] == len(content)
    assert download(client, auth, response.json["fileRef"]).data == content


def test_raw_upload_is_served_with_the_type_of_its_name_not_of_the_upload(client, auth):
    ref = upload_raw(client, auth, b"<script>alert(1)</script>", "page.txt",
                     "text/html").json["fileRef"]
    served = download(client, auth, ref)
    assert served.mimetype == "text/plain"
    assert served.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("content_type", ["multipart/mixed; boundary=x", "multipart/related"])
def test_raw_body_of_another_multipart_type_is_415_and_stores_nothing(client, auth, app,
                                                                        content_type):
    response = upload_raw(client, auth, b"--x\r\n\r\nbody\r\n--x--\r\n", "data.bin",
                          content_type)
    assert response.status_code == 415
    assert response.json["error"] == "File upload failed"
    assert "multipart/form-data" in response.json["details"]
    assert_nothing_stored(app)


def test_raw_body_without_a_content_type_is_the_file(client, auth):
    response = client.post("/rest/files?name=plain.bin", data=b"bytes", headers=auth)
    assert response.status_code == 201 and response.json["size"] == 5


def test_file_reference_is_dated_path_uuid_and_extension_with_the_encoded_name(client, auth,
                                                                                 app):
    ref = upload_raw(client, auth, name="Kitten photo.PNG").json["fileRef"]
    today = datetime.now(timezone.utc).strftime("%Y/%m/%d")
    assert re.fullmatch(rf"{app.files.default.name}://{today}/{UUID}\.PNG\?name=Kitten%20photo\.PNG", ref)


def test_file_reference_is_a_valid_file_attribute_value(client, auth):
    ref = upload_raw(client, auth, name="ä & ü=?#.jpg").json["fileRef"]
    assert DATATYPES["fileRef"].from_json(ref) == ref
    with pytest.raises(ValueError):     # what the API calls malformed, the datatype does too
        DATATYPES["fileRef"].from_json("fs://a.txt?name=%ff")


def test_location_header_is_the_path_with_the_encoded_file_reference(client, auth):
    response = upload_raw(client, auth, name="a b.txt")
    ref = response.json["fileRef"]
    assert response.headers["Location"] == f"/rest/files?fileRef={quote(ref, safe='')}"
    followed = client.get(response.headers["Location"], headers=auth)
    assert followed.status_code == 200 and followed.data == b"hello files"


def test_name_without_a_plain_extension_gives_a_stored_file_without_extension(client, auth, app):
    for name in ("README", "archive.t@r", "trailing."):
        assert upload_raw(client, auth, name=name).status_code == 201
    assert all(re.fullmatch(rf"\d{{4}}/\d\d/\d\d/{UUID}", path) for path in stored_files(app))


def test_unicode_name_round_trips_through_the_reference(client, auth):
    response = upload_raw(client, auth, name="Grüße 写真 +1.pdf")
    assert response.json["name"] == "Grüße 写真 +1.pdf"
    disposition = download(client, auth, response.json["fileRef"]).headers["Content-Disposition"]
    assert disposition.endswith("filename*=UTF-8''" + quote("Grüße 写真 +1.pdf", safe=""))


def test_raw_upload_without_name_is_400_and_stores_nothing(client, auth, app):
    response = upload_raw(client, auth, name=None)
    assert response.status_code == 400
    assert response.json["error"] == "File upload failed"
    assert "'name'" in response.json["details"]
    assert_nothing_stored(app)


def test_invalid_file_names_are_400_and_store_nothing(client, auth, app):
    for name in ("   ", "line\nbreak.txt", "nul\x00.txt", "tab\t.txt", "x" * 252 + ".txt", "ü" * 128):
        response = upload_raw(client, auth, name=name)
        assert response.status_code == 400, name
        assert response.json["error"] == "Invalid file name"
    assert_nothing_stored(app)


def test_empty_file_is_stored_with_size_zero(client, auth):
    response = upload_raw(client, auth, b"", "empty.txt")
    assert response.status_code == 201 and response.json["size"] == 0
    fetched = download(client, auth, response.json["fileRef"])
    assert fetched.status_code == 200 and fetched.data == b""
    assert fetched.headers["Content-Length"] == "0"


def test_multipart_upload_stores_the_file_part_under_its_filename(client, auth):
    response = upload_multipart(client, auth, b"part content", "report.pdf")
    assert response.status_code == 201
    assert response.json["name"] == "report.pdf" and response.json["size"] == 12
    assert response.json["fileRef"].endswith(".pdf?name=report.pdf")
    assert download(client, auth, response.json["fileRef"]).data == b"part content"


def test_multipart_query_name_overrides_the_part_filename(client, auth):
    response = upload_multipart(client, auth, filename="ignored.txt", query={"name": "chosen.png"})
    assert response.json["name"] == "chosen.png"
    assert response.json["fileRef"].endswith(".png?name=chosen.png")


def test_multipart_part_filename_keeps_only_its_last_path_segment(client, auth):
    response = upload_multipart(client, auth, filename="home/user/photo.jpg")
    assert response.json["name"] == "photo.jpg"


def test_multipart_other_parts_are_ignored(client, auth):
    data = {"before": "1", "file": (io.BytesIO(b"the file"), "f.txt"),
            "after": (io.BytesIO(b"another file"), "g.txt")}
    response = client.post("/rest/files", data=data, headers=auth)
    assert response.status_code == 201 and response.json["name"] == "f.txt"
    assert download(client, auth, response.json["fileRef"]).data == b"the file"


def test_multipart_without_a_file_part_is_400(client, auth, app):
    response = client.post("/rest/files", data={"other": (io.BytesIO(b"x"), "x.txt")}, headers=auth)
    assert response.status_code == 400
    assert response.json["details"] == "The multipart body has no part named 'file'"
    assert_nothing_stored(app)


def test_multipart_file_part_without_filename_needs_the_query_name(client, auth):
    def post(url):
        return client.post(url, data={"file": "plain field value"}, headers=auth,
                           content_type="multipart/form-data")
    assert post("/rest/files").status_code == 400
    response = post("/rest/files?name=field.txt")
    assert response.status_code == 201
    assert download(client, auth, response.json["fileRef"]).data == b"plain field value"


def test_multipart_without_boundary_is_400(client, auth):
    response = client.post("/rest/files", data=b"--x\r\n", headers={
        **auth, "Content-Type": "multipart/form-data"})
    assert response.status_code == 400
    assert "boundary" in response.json["details"]


def multipart_body(content, boundary="b0undary", closed=True):
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"f.bin\"\r\n\r\n").encode() + content
    return body + (f"\r\n--{boundary}--\r\n".encode() if closed else b"")


def post_multipart_bytes(client, auth, body, boundary="b0undary", **kwargs):
    return client.post("/rest/files", input_stream=io.BytesIO(body), headers={
        **auth, "Content-Type": f"multipart/form-data; boundary={boundary}"}, **kwargs)


def test_multipart_body_ending_before_its_closing_boundary_stores_nothing(client, auth, app):
    response = post_multipart_bytes(client, auth, multipart_body(b"x" * 100_000, closed=False))
    assert response.status_code == 400
    assert "closing boundary" in response.json["details"]
    assert_nothing_stored(app)


def test_upload_above_max_file_size_is_413_and_stores_nothing(make_app, auth):
    app = make_app({"svc.rest.max-file-size": "1KB"})
    client = Client(app)
    assert upload_raw(client, auth, b"x" * 1024).status_code == 201
    response = upload_raw(client, auth, b"x" * 1025)
    assert response.status_code == 413
    assert response.json["error"] == "File upload failed"
    assert "maximum file size of 1024 bytes" in response.json["details"]
    assert len(stored_files(app)) == 1 and temp_files(app) == []


def test_declared_length_above_the_limit_is_refused_before_reading(make_app, auth):
    client = Client(make_app({"svc.rest.max-file-size": "1KB"}))
    response = client.post("/rest/files?name=big.bin", input_stream=UnreadableStream(),
                           environ_overrides={"CONTENT_LENGTH": "5000000"}, headers=auth)
    assert response.status_code == 413


def chunked(client, auth, stream, query="name=c.bin", content_type="application/octet-stream"):
    """A body without Content-Length, as a server that decodes chunked bodies passes it on."""
    return client.post(f"/rest/files?{query}", input_stream=stream,
                       headers={**auth, "Transfer-Encoding": "chunked",
                                "Content-Type": content_type},
                       environ_overrides={"wsgi.input_terminated": True})


def test_body_without_content_length_is_counted_against_the_limit(make_app, auth):
    app = make_app({"svc.rest.max-file-size": "1MB"})
    client = Client(app)
    ok = chunked(client, auth, io.BytesIO(b"y" * (1 << 20)))
    assert ok.status_code == 201 and ok.json["size"] == 1 << 20
    too_big = chunked(client, auth, io.BytesIO(b"y" * ((1 << 20) + 1)))
    assert too_big.status_code == 413
    assert len(stored_files(app)) == 1 and temp_files(app) == []


def test_multipart_file_above_the_limit_is_413_whatever_the_declared_length(make_app, auth):
    app = make_app({"svc.rest.max-file-size": "1KB"})
    client = Client(app)
    body = multipart_body(b"z" * 1025)
    assert post_multipart_bytes(client, auth, body).status_code == 413
    response = chunked(client, auth, io.BytesIO(body), query="",
                       content_type="multipart/form-data; boundary=b0undary")
    assert response.status_code == 413
    assert_nothing_stored(app)


def test_multipart_body_is_limited_as_a_whole_not_only_its_file_part(make_app, auth):
    app = make_app({"svc.rest.max-file-size": "1KB"})
    head = (b"--b0undary\r\nContent-Disposition: form-data; name=\"other\"; filename=\"o\"\r\n\r\n"
            + b"o" * (2 << 20) + b"\r\n")
    body = head + multipart_body(b"small file")
    response = chunked(Client(app), auth, io.BytesIO(body), query="",
                       content_type="multipart/form-data; boundary=b0undary")
    assert response.status_code == 413
    assert "multipart framing" in response.json["details"]
    assert_nothing_stored(app)


def test_json_body_limit_does_not_apply_to_uploads_but_still_to_other_endpoints(make_app, auth):
    client = Client(make_app({"svc.rest.max-request-size": "1KB"}))
    assert upload_raw(client, auth, b"x" * 4096).status_code == 201
    response = client.post("/oauth2/token", data={"grant_type": "client_credentials",
                                                  "padding": "p" * 4096})
    assert response.status_code == 413


def test_body_shorter_than_its_content_length_is_an_interrupted_upload(client, auth, app):
    response = client.post("/rest/files?name=short.bin", input_stream=io.BytesIO(b"x" * 1000),
                           environ_overrides={"CONTENT_LENGTH": "5000"}, headers=auth)
    assert response.status_code == 400
    assert "interrupted" in response.json["details"]
    assert_nothing_stored(app)


def test_connection_breaking_mid_body_leaves_no_file(client, auth, app):
    response = client.post("/rest/files?name=broken.bin", input_stream=BrokenStream(600_000),
                           environ_overrides={"CONTENT_LENGTH": "1000000"}, headers=auth)
    assert response.status_code == 400
    assert_nothing_stored(app)


def test_connection_breaking_mid_chunked_body_leaves_no_file(client, auth, app):
    response = chunked(client, auth, BrokenStream(600_000))
    assert response.status_code == 400
    assert_nothing_stored(app)


def test_size_is_what_was_stored_not_what_was_declared(client, auth):
    response = client.post("/rest/files?name=s.bin", input_stream=io.BytesIO(b"0123456789"),
                           environ_overrides={"CONTENT_LENGTH": "4"}, headers=auth)
    assert response.status_code == 201 and response.json["size"] == 4
    assert download(client, auth, response.json["fileRef"]).data == b"0123"


def test_unknown_storage_name_on_upload_is_400(client, auth, app):
    response = client.post("/rest/files?name=a.txt&storageName=s3", data=b"x", headers=auth)
    assert response.status_code == 400
    assert response.json == {"error": "Invalid file reference",
                             "details": "Cannot find FileStorage with name: 's3'"}
    assert_nothing_stored(app)


def test_file_larger_than_a_part_is_stored_whole_and_read_back_by_range(client, auth, app):
    content = os.urandom(11 << 20)           # three parts of an S3 multipart upload (5 MiB)
    response = upload_raw(client, auth, content, "big.bin")
    assert response.status_code == 201 and response.json["size"] == len(content)
    ref = response.json["fileRef"]
    assert download(client, auth, ref).data == content
    across = download(client, auth, ref, {"Range": f"bytes={(5 << 20) - 10}-{(5 << 20) + 9}"})
    assert across.status_code == 206 and across.data == content[(5 << 20) - 10:(5 << 20) + 10]
    assert temp_files(app) == []


def test_connection_breaking_after_several_parts_leaves_no_file_and_no_unfinished_upload(
        client, auth, app):
    response = client.post("/rest/files?name=broken.bin", input_stream=BrokenStream(12 << 20),
                           environ_overrides={"CONTENT_LENGTH": str(20 << 20)}, headers=auth)
    assert response.status_code == 400
    assert_nothing_stored(app)
