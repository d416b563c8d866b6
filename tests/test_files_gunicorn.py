"""Files API through a real gunicorn process, for both storage kinds: memory
stays flat while large files stream both ways, and a client going away
mid-upload leaves nothing. The 1 GiB figures in the README come from
tests/measure_file_memory.py."""
import socket
import time

import pytest

from files_support import FILE_STORAGE_KINDS, StorageView
from measure_file_memory import MIB, measure, report
from servers import gunicorn_server, reset_peak

pytestmark = FILE_STORAGE_KINDS

SIZE = 64 * MIB
# Holding the file in memory would grow the worker by at least SIZE; streaming
# holds a few chunks (fs) or a few copies of one 5 MiB part (S3, in boto3's hands).
MAX_GROWTH_KIB = 32 * 1024


@pytest.fixture
def server(tmp_path, database_url, file_storage):
    with gunicorn_server(tmp_path, database_url,
                         {"svc.rest.max-file-size": "200MB", **file_storage}) as server:
        yield server


def test_large_uploads_and_downloads_stream_without_growing_the_worker(server):
    if not reset_peak(server.worker_pids()[0]):
        pytest.skip("this kernel does not let us reset a process's peak RSS")
    results = measure(server, SIZE)
    assert [m.label for m in results] == ["raw upload", "multipart upload", "full download",
                                         "range download"]
    assert all(m.growth_kib < MAX_GROWTH_KIB for m in results), report(results, SIZE)


def _wait_for(condition, what, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_client_going_away_mid_upload_leaves_no_file(server, tmp_path, framing, file_storage):
    storage = StorageView.from_settings(tmp_path, file_storage)
    head = [b"POST /rest/files?name=gone.bin HTTP/1.1", b"Host: localhost",
            f"Authorization: Bearer {server.token}".encode()]
    piece = b"x" * MIB
    if framing == "chunked":
        head.append(b"Transfer-Encoding: chunked")
        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
    else:
        head.append(b"Content-Length: %d" % (16 * MIB))
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n")
        for _ in range(6):              # more than one part of an S3 multipart upload
            sock.sendall(piece)
        _wait_for(storage.pending, "the upload never started writing")
    _wait_for(lambda: storage.pending() == [], "the unfinished upload was not removed")
    assert storage.stored() == []
