"""Request framing through a real server: a body is limited and malformed
the same way whether it comes with Content-Length or chunked."""
import json

import pytest

from servers import chunked, exchange, gunicorn_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    directory = tmp_path_factory.mktemp("framing")
    with gunicorn_server(directory, f"sqlite:///{directory}/restsvc.db",
                         {"svc.demo-data": True}) as running:
        yield running


def _raw(server, head, body, content_type="application/json"):
    """Send ``head`` lines and ``body`` bytes; (status, parsed JSON body)."""
    lines = [*head, f"Host: {server.host}", f"Authorization: Bearer {server.token}",
             f"Content-Type: {content_type}", "Connection: close"]
    data = exchange(server, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    head_text, _, payload = data.partition(b"\r\n\r\n")
    status = int(head_text.split(b" ", 2)[1])
    return status, json.loads(payload) if payload.startswith((b"{", b"[")) else payload


def test_a_body_above_the_request_limit_is_413_with_or_without_content_length(server):
    body = json.dumps([{"name": "x" * 100}] * 110_000).encode()     # about 11 MB
    assert len(body) > 10 << 20
    post = "POST /rest/entities/Customer HTTP/1.1"
    announced = _raw(server, [post, f"Content-Length: {len(body)}"], body)
    sent_chunked = _raw(server, [post, "Transfer-Encoding: chunked"], chunked(body))
    assert announced[0] == sent_chunked[0] == 413, (announced, sent_chunked)
    assert announced[1] == sent_chunked[1] and announced[1]["error"]


def test_a_malformed_chunk_size_is_a_400(server):
    body = b'{"name": "chunky"}'
    status, answer = _raw(server, ["POST /rest/entities/Customer HTTP/1.1",
                                   "Transfer-Encoding: chunked"],
                          b"zz\r\n" + body + b"\r\n0\r\n\r\n")
    assert status == 400 and answer["error"] == "Malformed request body"
    status, answer = _raw(server, ["POST /rest/entities/Customer HTTP/1.1",
                                   "Transfer-Encoding: chunked"], chunked(body))
    assert status == 201 and answer["_instanceName"] == "chunky"


def test_a_malformed_chunk_size_in_a_token_request_is_a_400(server):
    form = b"grant_type=client_credentials"
    status, answer = _raw(server, ["POST /oauth2/token HTTP/1.1", "Transfer-Encoding: chunked"],
                          b"1x\r\n" + form + b"\r\n0\r\n\r\n", "application/x-www-form-urlencoded")
    assert status == 400 and answer["error"] == "invalid_request"      # RFC 6749 5.2
    assert "framing" in answer["error_description"]


def test_a_chunked_token_request_over_16_kb_is_a_413_oauth_error(server):
    """Without a Content-Length the token endpoint stops reading at 16 KB
    (it parsed up to 10 MB of empty pairs before: 400-470 MiB of worker memory)."""
    form = b"a=&" * 100_000 + b"grant_type=client_credentials"
    status, answer = _raw(server, ["POST /oauth2/token HTTP/1.1", "Transfer-Encoding: chunked"],
                          chunked(form), "application/x-www-form-urlencoded")
    assert status == 413 and answer["error"] == "invalid_request"      # RFC 6749 5.2
    assert "16384 bytes" in answer["error_description"]


def _get(server, target, extra=()):
    """A GET's (status, Content-Type, parsed JSON body) through the server."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {server.host}",
             f"Authorization: Bearer {server.token}", *extra, "Connection: close"]
    data = exchange(server, ("\r\n".join(lines) + "\r\n\r\n").encode())
    head, _, payload = data.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])
    return int(head.split(b" ", 2)[1]), headers.get("Content-Type"), json.loads(payload)


def _grades(line_length):
    """The target of a GET whose request line is ``line_length`` bytes long:
    a long list of grades (empty pairs, ``&``, fill up the last bytes)."""
    base = "/rest/queries/Customer/customersByGrades?grades=GOLD"
    fill = line_length - len(f"GET {base} HTTP/1.1")
    return base + "&grades=SILVER" * (fill // 14) + "&" * (fill % 14)


def test_a_request_line_over_the_limit_is_a_json_414_in_the_error_format(server):
    status, content_type, body = _get(server, _grades(8191))
    assert status == 414 and content_type.startswith("application/json")
    assert body["error"] == "Request line too long" and "8190 bytes" in body["details"]


def test_a_request_line_at_the_limit_reaches_the_application(server):
    status, content_type, body = _get(server, _grades(8190))
    assert status == 200 and content_type.startswith("application/json")
    assert isinstance(body, list)


def test_other_requests_gunicorn_refuses_are_answered_in_the_error_format(server):
    status, content_type, body = _get(server, "/rest/userInfo", [f"X-Big: {'b' * 9000}"])
    assert status == 431 and content_type.startswith("application/json")
    assert set(body) == {"error", "details"} and body["error"]
    status, content_type, body = _get(server, "/rest/user Info")
    assert status == 400 and content_type.startswith("application/json")
    assert set(body) == {"error", "details"}
