"""Reports through a real gunicorn process: a 100,000-row report in CSV and
XLSX does not grow the worker by more than 64 MiB, and a client that goes
away mid-download leaves no temporary file behind. The timings in the README
come from tests/benchmark/reports.py."""
import os
import socket

import pytest

from reports_load import BIG, BIG_REPORT, download, fill_orders
from reports_support import reports_dir
from servers import launch, reset_peak, stop, wait_until_ready

ROWS = 100_000
MAX_GROWTH_KIB = 64 * 1024


@pytest.fixture
def server_with(tmp_path, database_url, monkeypatch):
    """A server on this test's database with ``rows`` more orders."""
    started = []

    def start(rows):
        fill_orders(database_url, rows)
        # The server's temporary files go to a directory of this test's own.
        monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
        (tmp_path / "tmp").mkdir()
        overrides = {"svc.reports.dir": reports_dir(tmp_path, BIG_REPORT)}
        server = launch(tmp_path / "server", database_url, overrides)
        started.append(server)
        return wait_until_ready(server)
    yield start
    for server in started:
        stop(server)


def _open_files(pid):
    links = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return links


def test_a_100000_row_report_streams_without_growing_the_worker(server_with, tmp_path):
    server = server_with(ROWS)
    if not reset_peak(server.worker_pids()[0]):
        pytest.skip("this kernel does not let us reset a process's peak RSS")
    transfers = [download(server, BIG, "CSV"), download(server, BIG, "XLSX")]
    summary = ", ".join(f"{t.label}: {t.status}, {t.size} bytes, {t.seconds:.1f} s, "
                        f"+{t.growth_kib / 1024:.1f} MiB" for t in transfers)
    assert all(t.status == 200 for t in transfers), summary
    assert transfers[0].size > ROWS * 60 and transfers[1].size > ROWS * 20, summary
    assert all(t.growth_kib < MAX_GROWTH_KIB for t in transfers), summary
    assert os.listdir(tmp_path / "tmp") == []


def test_a_client_going_away_mid_download_leaves_no_temporary_file(server_with, tmp_path):
    server = server_with(20_000)
    pid = server.worker_pids()[0]
    deleted_before = [link for link in _open_files(pid) if "(deleted)" in link]
    for template in ("CSV", "XLSX"):
        _go_away_mid_download(server, template)
        # One sync worker: this request is served only once the broken one is done.
        status, _ = server.request("GET", "/rest/reports/report")
        assert status == 200
        assert [link for link in _open_files(pid) if "(deleted)" in link] == deleted_before
        assert os.listdir(tmp_path / "tmp") == []


def _go_away_mid_download(server, template):
    body = f'{{"template": "{template}"}}'.encode()
    request = (f"POST /rest/reports/run/{BIG} HTTP/1.1\r\nHost: localhost\r\n"
               f"Authorization: Bearer {server.token}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection((server.host, server.port)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(request)
        received = sock.recv(4096)
        assert received.startswith(b"HTTP/1.1 200"), received[:200]
