"""``restsvc serve``'s defaults under a real gunicorn: slow clients do not hold
up the others, a slow but steady upload outlives gunicorn's timeout, and
SIGTERM drains (not ready, still serving) before the graceful stop.
The full-size figures come from tests/benchmark/slow_clients.py (README)."""
import json
import signal
import threading
import time
from contextlib import suppress

import pytest

from servers import gunicorn_server, trickle

MIB = 1 << 20


@pytest.fixture
def server(tmp_path, database_url, request):
    # Stopping does not wait long for the slow clients some tests leave behind.
    serve_args = getattr(request, "param", ("--graceful-timeout", "1"))
    with gunicorn_server(tmp_path, database_url, {"svc.rest.max-file-size": "64MB"},
                         workers=2, timeout=3, serve_args=serve_args) as server:
        yield server


def timed_request(server, path="/rest/entities/Customer?limit=5"):
    started = time.monotonic()
    status, _ = server.request("GET", path)
    return status, time.monotonic() - started


def send_slowly(server):
    with suppress(OSError):         # the server stops before the body is complete
        trickle(server, 200, [b"x" * 20] * 10, 1.0)


def test_four_clients_sending_a_body_at_20_bytes_per_second_do_not_hold_up_others(server):
    slow = [threading.Thread(target=send_slowly, args=(server,), daemon=True) for _ in range(4)]
    for thread in slow:
        thread.start()
    time.sleep(1)                        # all four are now in the middle of their bodies
    answers = [timed_request(server) for _ in range(10)]
    assert all(status == 200 for status, _ in answers)
    assert max(seconds for _, seconds in answers) < 1, answers
    assert any(thread.is_alive() for thread in slow)


def test_a_slow_but_steady_upload_longer_than_gunicorns_timeout_finishes(server):
    # 6 MiB at 1.2 MiB/s: 5 s, past this server's 3 s timeout.
    piece = b"u" * (MIB // 5)
    started = time.monotonic()
    status, body = trickle(server, 30 * len(piece), [piece] * 30, 1 / 6)
    assert status == 201, body
    assert json.loads(body)["size"] == 30 * len(piece)
    assert time.monotonic() - started > 4


@pytest.mark.parametrize("server", [("--drain", "2", "--graceful-timeout", "10")], indirect=True)
def test_sigterm_reports_not_ready_keeps_serving_through_the_drain_then_finishes_in_flight(
        server):
    upload = {}
    piece = b"d" * (MIB // 4)
    # In flight from before the signal until after the drain: 4 s.
    uploader = threading.Thread(target=lambda: upload.update(answer=trickle(
        server, 16 * len(piece), [piece] * 16, 0.25)))
    uploader.start()
    time.sleep(0.3)
    assert server.request("GET", "/health/ready")[0] == 200
    server.process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    deadline = signalled + 1
    while (answer := server.request("GET", "/health/ready"))[0] != 503:
        assert time.monotonic() < deadline, "still ready after SIGTERM"
        time.sleep(0.05)
    assert json.loads(answer[1]) == {"status": "DOWN", "details": {"instance": "shutting down"}}
    assert server.request("GET", "/health/live")[0] == 200
    while time.monotonic() - signalled < 1.5:
        assert timed_request(server)[0] == 200       # new requests are still served
        time.sleep(0.1)
    uploader.join(timeout=20)
    status, body = upload["answer"]
    assert status == 201 and json.loads(body)["size"] == 4 * MIB
    assert server.process.wait(timeout=10) == 0
    assert time.monotonic() - signalled >= 2


def search_url(value_length):
    from urllib.parse import quote
    condition = {"property": "name", "operator": "contains", "value": "x" * value_length}
    return "/rest/entities/Customer/search?filter=" + quote(json.dumps({"conditions": [condition]}))


def test_a_get_search_with_a_filter_up_to_gunicorns_maximum_request_line_is_answered(server):
    # gunicorn's default request line (4094 bytes) would answer this 414.
    url = search_url(7900)
    assert 6000 < len(f"GET {url} HTTP/1.1") < 8190
    status, body = server.request("GET", url)
    assert status == 200 and json.loads(body) == []
    status, _ = server.request("GET", search_url(8200))
    assert status == 414          # gunicorn's own answer, documented on the operation
