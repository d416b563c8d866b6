"""Slow clients against ``restsvc serve`` with its default worker settings.

    python tests/benchmark/slow_clients.py [--workers 2] [--threads 16]

Two measurements (issue 9, point 3), on SQLite in a temporary directory:
1. four connections send a request body at 20 bytes/s; meanwhile 50 small
   GET requests are timed one after another (the slowest is what counts);
2. one 48 MiB upload at 1.2 MiB/s (40 s, past gunicorn's 30 s timeout of
   old): its answer and duration.
"""
import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from servers import gunicorn_server, trickle  # noqa: E402

MIB = 1 << 20


def other_requests_while_slow_bodies(server, count=50):
    slow = [threading.Thread(target=trickle, args=(server, 400, [b"x" * 20] * 20, 1.0),
                             daemon=True) for _ in range(4)]
    for thread in slow:
        thread.start()
    time.sleep(2)
    seconds = []
    for _ in range(count):
        started = time.monotonic()
        status, _ = server.request("GET", "/rest/entities/Customer?limit=5")
        assert status == 200
        seconds.append(time.monotonic() - started)
    return max(seconds), sorted(seconds)[len(seconds) // 2]


def slow_upload(server, size_mib=48, rate_mib=1.2):
    piece = b"u" * (MIB // 10)
    pieces = size_mib * 10
    started = time.monotonic()
    status, body = trickle(server, pieces * len(piece), [piece] * pieces, 0.1 / rate_mib)
    return status, body[:200], time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="restsvc-slow-") as directory:
        directory = Path(directory)
        with gunicorn_server(directory, f"sqlite:///{directory}/restsvc.db",
                             {"svc.demo-data": True}, workers=args.workers, timeout=30,
                             serve_args=("--threads", str(args.threads),
                                         "--graceful-timeout", "1")) as server:
            worst, median = other_requests_while_slow_bodies(server)
            print(f"workers {args.workers} x threads {args.threads}, gunicorn timeout 30 s")
            print(f"4 bodies at 20 B/s: other GETs median {median * 1000:.1f} ms, "
                  f"slowest {worst * 1000:.1f} ms")
            status, body, seconds = slow_upload(server)
            size = json.loads(body).get("size") if status == 201 else body
            print(f"48 MiB upload at 1.2 MiB/s: HTTP {status} after {seconds:.1f} s ({size})")


if __name__ == "__main__":
    main()
