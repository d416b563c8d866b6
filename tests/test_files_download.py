"""Files API, download: headers, disposition, ranges, ETags, bad references (both storage kinds)."""
from urllib.parse import quote

import pytest
from werkzeug.test import Client

from files_support import FILE_STORAGE_KINDS, download, uploaded_ref
from restsvc.files.refs import parse_file_ref

pytestmark = FILE_STORAGE_KINDS

CONTENT = bytes(range(256)) * 40          # 10240 bytes


@pytest.fixture
def ref(client, auth):
    return uploaded_ref(client, auth, CONTENT, "scan.pdf")


def test_download_streams_the_content_with_type_length_and_no_cache_headers(client, auth, ref):
    response = download(client, auth, ref)
    assert response.status_code == 200 and response.data == CONTENT
    assert response.headers["Content-Type"] == "application/pdf"
    assert response.headers["Content-Length"] == "10240"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["Pragma"] == "no-cache"
    assert response.headers["Expires"] == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_unknown_extension_is_application_octet_stream(client, auth):
    ref = uploaded_ref(client, auth, name="blob.zzqx")
    assert download(client, auth, ref).headers["Content-Type"] == "application/octet-stream"


def test_file_with_an_inline_extension_is_inline(client, auth, ref):
    disposition = download(client, auth, ref).headers["Content-Disposition"]
    assert disposition == "inline; filename=\"scan.pdf\"; filename*=UTF-8''scan.pdf"


def test_attachment_true_makes_an_inline_type_an_attachment(client, auth, ref):
    disposition = download(client, auth, ref, attachment="true").headers["Content-Disposition"]
    assert disposition.startswith("attachment; ")
    assert download(client, auth, ref, attachment="false").headers[
        "Content-Disposition"].startswith("inline; ")


def test_extension_outside_the_inline_list_is_an_attachment(client, auth):
    for name in ("notes.txt", "no-extension"):
        ref = uploaded_ref(client, auth, name=name)
        assert download(client, auth, ref).headers["Content-Disposition"].startswith("attachment; ")


def test_the_name_in_a_link_does_not_change_the_stored_files_type(client, auth):
    text_ref = uploaded_ref(client, auth, b"<script>alert(1)</script>", "notes.txt")
    for label in ("x.pdf", "x.html", "x.svg", "x"):
        crafted = text_ref.split("?")[0] + "?name=" + label
        response = download(client, auth, crafted)
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        assert response.headers["Content-Disposition"].startswith("attachment; ")
        # named after the stored path, not the label
        assert f'filename="{label}"' not in response.headers["Content-Disposition"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_renamed_link_keeps_its_label_while_the_extension_is_the_stored_one(client, auth, ref):
    renamed = ref.split("?")[0] + "?name=invoice-2024.PDF"
    disposition = download(client, auth, renamed).headers["Content-Disposition"]
    assert disposition == "inline; filename=\"invoice-2024.PDF\"; filename*=UTF-8''invoice-2024.PDF"


def test_html_like_files_are_never_inline_even_when_their_extension_is_listed(make_app, auth):
    client = Client(make_app({"svc.rest.inline-enabled-file-extensions": "html,svg,xml,xhtml,png"}))
    for name in ("page.html", "logo.svg", "data.xml", "page.xhtml"):
        response = download(client, auth, uploaded_ref(client, auth, b"<x/>", name))
        assert response.headers["Content-Disposition"].startswith("attachment; "), name
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    png = download(client, auth, uploaded_ref(client, auth, b"\x89PNG", "a.png"))
    assert png.headers["Content-Disposition"].startswith("inline; ")


def test_inline_extensions_come_from_the_setting_and_ignore_case(make_app, auth):
    client = Client(make_app({"svc.rest.inline-enabled-file-extensions": "TXT"}))
    for name, expected in (("a.txt", "inline"), ("B.Txt", "inline"), ("c.pdf", "attachment")):
        ref = uploaded_ref(client, auth, name=name)
        assert download(client, auth, ref).headers["Content-Disposition"].startswith(expected + ";")


def test_content_disposition_has_an_ascii_fallback_and_the_exact_utf8_name(client, auth):
    name = 'Grüße "写真" \\ ñ.png'
    disposition = download(client, auth, uploaded_ref(client, auth, name=name)).headers[
        "Content-Disposition"]
    assert disposition == ("inline; filename=\"Gruße _写真_ _ n.png\"".replace("ß", "_")
                           .replace("写真", "__") + f"; filename*=UTF-8''{quote(name, safe='')}")


def test_crafted_name_in_a_reference_cannot_inject_headers(client, auth, ref):
    crafted = ref.split("?")[0] + "?name=" + quote('x"\r\nSet-Cookie: a=b\r\n.pdf', safe="")
    response = download(client, auth, crafted)
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers
    assert "\r" not in response.headers["Content-Disposition"]
    assert response.headers["Content-Disposition"].startswith('inline; filename="x___Set-Cookie')


def test_head_gives_the_headers_without_the_body(client, auth, ref):
    response = client.head("/rest/files", query_string={"fileRef": ref}, headers=auth)
    assert response.status_code == 200 and response.data == b""
    assert response.headers["Content-Length"] == "10240"


def test_single_range_is_206_with_content_range(client, auth, ref):
    cases = {"bytes=0-99": (0, 100), "bytes=10000-": (10000, 10240), "bytes=-40": (10200, 10240),
             "bytes=10200-999999": (10200, 10240), "bytes=-999999": (0, 10240)}
    for header, (start, stop) in cases.items():
        response = download(client, auth, ref, {"Range": header})
        assert response.status_code == 206, header
        assert response.headers["Content-Range"] == f"bytes {start}-{stop - 1}/10240", header
        assert response.headers["Content-Length"] == str(stop - start), header
        assert response.data == CONTENT[start:stop], header


def test_range_beyond_the_end_is_416(client, auth, ref):
    for header in ("bytes=10240-", "bytes=20000-30000"):
        response = download(client, auth, ref, {"Range": header})
        assert response.status_code == 416, header
        assert response.headers["Content-Range"] == "bytes */10240"
        assert response.json["error"] == "Range not satisfiable"


def test_several_or_malformed_ranges_get_the_whole_file(client, auth, ref):
    for header in ("bytes=0-1,5-6", "bytes=9-3", "lines=1-2", "bytes=x-y"):
        response = download(client, auth, ref, {"Range": header})
        assert response.status_code == 200 and response.data == CONTENT, header


def test_if_range_applies_the_range_only_while_the_etag_matches(client, auth, ref):
    etag = download(client, auth, ref).headers["ETag"]
    current = download(client, auth, ref, {"Range": "bytes=0-9", "If-Range": etag})
    assert current.status_code == 206 and current.data == CONTENT[:10]
    stale = download(client, auth, ref, {"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert stale.status_code == 200 and stale.data == CONTENT


def test_if_none_match_with_the_current_etag_is_304_without_body(client, auth, ref):
    etag = download(client, auth, ref).headers["ETag"]
    for header in (etag, f'"other", W/{etag}', "*"):
        response = download(client, auth, ref, {"If-None-Match": header})
        assert response.status_code == 304 and response.data == b""
        assert response.headers["ETag"] == etag
    assert download(client, auth, ref, {"If-None-Match": '"other"'}).status_code == 200


def test_etag_is_stable_across_requests_and_instances_but_differs_per_file(make_app, auth):
    first, second = Client(make_app()), Client(make_app())
    ref = uploaded_ref(first, auth, b"same bytes")
    etags = {download(c, auth, ref).headers["ETag"] for c in (first, second, first)}
    assert len(etags) == 1 and etags.pop().startswith('"')
    other = uploaded_ref(first, auth, b"same bytes")
    assert download(first, auth, other).headers["ETag"] != download(first, auth, ref).headers["ETag"]


def test_missing_file_is_404_naming_the_reference(client, auth, ref):
    path = parse_file_ref(ref).path
    missing = ref.replace(path, path[:-12] + "000000000000")
    response = download(client, auth, missing)
    assert response.status_code == 404
    assert response.json == {"error": "File not found",
                             "details": f"File not found. File reference: {missing}"}


def test_malformed_reference_is_400(client, auth):
    for text in ("nonsense", "fs://2024/01/01/a.txt", "fs://a.txt?nam=x", "://a.txt?name=x",
                 "fs:/a.txt?name=x", "fs://a.txt?name=%ff"):
        response = download(client, auth, text)
        assert response.status_code == 400, text
        assert response.json == {"error": "Invalid file reference",
                                 "details": f"Cannot convert '{text}' into valid file reference"}


def test_unknown_storage_is_400(client, auth):
    response = download(client, auth, "s3://2024/01/01/a.txt?name=a.txt")
    assert response.status_code == 400
    assert response.json == {"error": "Invalid file reference",
                             "details": "Cannot find FileStorage with name: 's3'"}


def test_missing_file_ref_parameter_is_400(client, auth):
    response = client.get("/rest/files", headers=auth)
    assert response.status_code == 400 and response.json["error"] == "Invalid file reference"


def test_invalid_attachment_value_is_400(client, auth, ref):
    assert download(client, auth, ref, attachment="perhaps").status_code == 400
