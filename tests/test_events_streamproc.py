"""The change feed through the stream process of ``restsvc serve``
(restsvc/events/streamproc.py): a worker hands the stream's connection over,
the process's one reader fans the events out to every stream as its caller
may see them; it outlives the worker that handed it over, is started again
when it dies, cuts a reader that falls behind without delaying others, and
ends its streams on revocation, drain and SIGTERM."""
import json
import os
import re
import signal
import socket
import threading

from conftest import basic, demo_id
from servers import launch, stop, wait_until_ready
from test_events_gunicorn import Stream, _until

STREAMS = {"svc.events.poll-interval": "50ms", "svc.events.streams-in-serve": True}
BRUNOS_ORDER = demo_id("order", 1)      # of customer 1, Bruno's own
OTHER_ORDER = demo_id("order", 2)


def _serving(tmp_path, database_url, overrides=None, **kwargs):
    return wait_until_ready(launch(tmp_path, database_url, {**STREAMS, **(overrides or {})},
                                   **kwargs))


def _stream_pids(server):
    """The stream processes that took streams so far, in order (from the log)."""
    return [int(pid) for pid in re.findall(r"stream process \(pid (\d+)\) takes streams",
                                           server.log())]


def _put(server, entity, key, values, headers=None):
    status, body = server.request("PUT", f"/rest/entities/{entity}/{key}",
                                  json.dumps(values).encode(),
                                  {"Content-Type": "application/json", **(headers or {})})
    assert status == 200, body


def _token(server, username, password):
    status, body = server.request(
        "POST", "/oauth2/token",
        f"grant_type=password&username={username}&password={password}".encode(),
        {"Authorization": basic("demo-client", "demo-secret"),
         "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, body
    return json.loads(body)["access_token"]


class _As:
    """The server as seen with another token (for Stream)."""

    def __init__(self, server, token):
        self.server, self.token = server, token

    def connection(self, timeout=60):
        return self.server.connection(timeout)

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"}


def _open(server, entity="Customer", last_event_id=None):
    stream = Stream.__new__(Stream)
    stream.conn = server.connection(timeout=60)
    headers = server.auth()
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    stream.conn.request("GET", f"/rest/events?entity={entity}", headers=headers)
    stream.response = stream.conn.getresponse()
    assert stream.response.status == 200, stream.response.read()
    # The stream process writes the head itself, for a body that ends with the connection.
    assert stream.response.getheader("Connection") == "close"
    return stream


def _open_streams(server):
    """restsvc_event_streams as the instance's /metrics reports it."""
    status, body = server.request("POST", "/oauth2/token", b"grant_type=client_credentials",
                                  {"Authorization": basic("monitor", "monitor-secret"),
                                   "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, body
    status, body = server.request("GET", "/metrics", headers={
        "Authorization": f"Bearer {json.loads(body)['access_token']}"})
    assert status == 200, body
    found = re.search(rb"^restsvc_event_streams (\S+)$", body, re.MULTILINE)
    return None if found is None else float(found.group(1))


def test_row_rules_decide_per_stream_and_streams_outlive_the_worker(tmp_path, database_url):
    server = _serving(tmp_path, database_url)
    try:
        _until(lambda: _stream_pids(server), what="the stream process")
        bruno = _As(server, _token(server, "bruno", "bruno-password"))
        full, own = _open(server, "Order"), _open(bruno, "Order")
        # The instance's gauge counts the streams the stream process holds.
        _until(lambda: _open_streams(server) == 2, what="restsvc_event_streams 2")
        [worker] = [pid for pid in server.worker_pids() if pid not in _stream_pids(server)]
        os.kill(worker, signal.SIGKILL)         # the worker that handed them over is gone
        _until(lambda: len(server.worker_pids()) == 2 and worker not in server.worker_pids(),
               what="a new worker")
        _put(server, "Order", OTHER_ORDER, {"number": "Not Bruno's"})
        _put(server, "Order", BRUNOS_ORDER, {"number": "Bruno's"})
        assert [e["entityId"] for e in full.events(2)] == [OTHER_ORDER, BRUNOS_ORDER]
        [seen] = own.events(1)
        assert seen["entityId"] == BRUNOS_ORDER
        full.close()
        own.close()
    finally:
        stop(server)


def test_a_killed_stream_process_is_started_again_and_streams_resume(tmp_path, database_url):
    server = _serving(tmp_path, database_url)
    customer = demo_id("customer", 3)
    try:
        [first] = _until(lambda: _stream_pids(server), what="the stream process")
        stream = _open(server)
        _put(server, "Customer", customer, {"name": "Before"})
        [before] = stream.events(1)
        os.kill(first, signal.SIGKILL)
        stream.rest()                           # the connection ends with the process
        stream.close()
        _put(server, "Customer", customer, {"name": "Meanwhile"})
        [_, second] = _until(lambda: _stream_pids(server)[1:] and _stream_pids(server),
                             what="a new stream process")
        assert second != first
        resumed = _open(server, last_event_id=before["id"])
        _put(server, "Customer", customer, {"name": "After"})
        events = resumed.events(2)
        assert [e["id"] for e in events] == [before["id"] + 1, before["id"] + 2]
        resumed.close()
    finally:
        stop(server)


def test_a_reader_that_falls_behind_is_cut_and_the_others_go_on(tmp_path, database_url):
    server = _serving(tmp_path, database_url, {"svc.events.stream-buffer": "16KB"},
                      workers=2)
    customer = demo_id("customer", 3)
    try:
        _until(lambda: _stream_pids(server), what="the stream process")
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        slow.connect((server.host, server.port))
        slow.sendall(f"GET /rest/events?entity=Customer HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {server.token}\r\n\r\n".encode())
        fast = _open(server)
        seen = []

        def read():
            while (message := fast.message()) is not None:
                if "data" in message:
                    seen.append(json.loads(message["data"]))
        reading = threading.Thread(target=read, daemon=True)
        reading.start()
        writes = 0
        while "fell behind" not in server.log():        # the slow one reads nothing
            assert writes < 5000, "the slow reader was never cut"
            _put(server, "Customer", customer, {"name": f"Name {writes}"})
            writes += 1
        _put(server, "Customer", customer, {"name": "Last"})
        _until(lambda: len(seen) == writes + 1 or not reading.is_alive(),
               what="every event on the other stream")
        assert len(seen) == writes + 1, "the reader that kept up was cut too"
        received = b""
        slow.settimeout(60)
        while chunk := slow.recv(65536):
            received += chunk
        slow.close()
        assert b"\nevent: reset\n" in received and received.endswith(b"\n\n")
        assert received.count(b"data: {\"id\"") < writes       # it got fewer: it was cut
        fast.close()
    finally:
        stop(server)


def test_revocation_ends_a_stream_of_the_stream_process(tmp_path, database_url):
    server = _serving(tmp_path, database_url)
    try:
        _until(lambda: _stream_pids(server), what="the stream process")
        token = _token(server, "alice", "alice-password")
        stream = _open(_As(server, token))
        status, body = server.request("POST", "/oauth2/revoke", f"token={token}".encode(), {
            "Authorization": basic("demo-client", "demo-secret"),
            "Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200, body
        messages = stream.rest()
        assert messages and messages[-1].get("event") == "end"
        stream.close()
    finally:
        stop(server)


def test_the_drain_and_sigterm_end_the_stream_process_streams(tmp_path, database_url):
    server = _serving(tmp_path, database_url,
                      serve_args=("--drain", "30", "--graceful-timeout", "30"))
    try:
        [pid] = _until(lambda: _stream_pids(server), what="the stream process")
        stream = _open(server)
        _put(server, "Customer", demo_id("customer", 3), {"name": "Seen"})
        assert len(stream.events(1)) == 1
        server.process.send_signal(signal.SIGTERM)
        stream.rest()               # ends cleanly, well before the 30 s drain is over
        assert server.process.poll() is None, "the stream ended only with the server"
        stream.close()
        server.process.send_signal(signal.SIGTERM)      # a second SIGTERM skips the drain
        server.process.wait(timeout=60)
        _until(lambda: not os.path.exists(f"/proc/{pid}") or "\nState:\tZ" in
               open(f"/proc/{pid}/status").read(), seconds=10, what="the process's end")
        assert f"stream process (pid {pid}) stopped" in server.log()
    finally:
        if server.process.poll() is None:
            server.process.kill()
