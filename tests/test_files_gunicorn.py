"""Files API through a real gunicorn process: memory stays flat while large
files stream both ways, and a client going away mid-upload leaves nothing.
The 1 GiB figures in the README come from tests/measure_file_memory.py."""
import os
import socket
import time

import pytest

from measure_file_memory import MIB, measure, report
from servers import gunicorn_server, reset_peak

SIZE = 64 * MIB
# Holding the file in memory would grow the worker by at least SIZE.
MAX_GROWTH_KIB = 16 * 1024


@pytest.fixture
def server(tmp_path, database_url):
    with gunicorn_server(tmp_path, database_url, {"svc.rest.max-file-size": "200MB"}) as server:
        yield server


def test_large_uploads_and_downloads_stream_without_growing_the_worker(server):
    if not reset_peak(server.worker_pids()[0]):
        pytest.skip("this kernel does not let us reset a process's peak RSS")
    results = measure(server, SIZE)
    assert [m.label for m in results] == ["raw upload", "multipart upload", "full download",
                                         "range download"]
    assert all(m.growth_kib < MAX_GROWTH_KIB for m in results), report(results, SIZE)


def _storage(tmp_path):
    root = tmp_path / "files"
    finished = [f for d, dirs, files in os.walk(root) if ".tmp" not in d for f in files]
    return finished, os.listdir(root / ".tmp")


def _wait_for_temp_file(tmp_path, seconds=20):
    deadline = time.monotonic() + seconds
    while not _storage(tmp_path)[1]:
        assert time.monotonic() < deadline, "the upload never started writing"
        time.sleep(0.05)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_client_going_away_mid_upload_leaves_no_file(server, tmp_path, framing):
    head = [b"POST /rest/files?name=gone.bin HTTP/1.1", b"Host: localhost",
            f"Authorization: Bearer {server.token}".encode()]
    piece = b"x" * MIB
    if framing == "chunked":
        head.append(b"Transfer-Encoding: chunked")
        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
    else:
        head.append(b"Content-Length: %d" % (8 * MIB))
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
        for _ in range(2):
            sock.sendall(piece)
        _wait_for_temp_file(tmp_path)
    # One sync worker: this request is served only once the broken one is done.
    status, _ = server.request("GET", "/rest/files?fileRef=fs://2024/01/01/none?name=x")
    assert status == 404
    assert _storage(tmp_path) == ([], [])
