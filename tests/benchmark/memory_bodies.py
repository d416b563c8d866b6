"""Worker memory for large bodies the service refuses (issue 17, points 1 and 2).

    python tests/benchmark/memory_bodies.py [--size-mb 9.9] [--database URL]

Starts restsvc under gunicorn (one worker; SQLite in a temporary directory
unless --database names a PostgreSQL URL) and sends each body below once. For
each it prints the answer, the worker's peak RSS growth (VmHWM, reset before
the request, minus VmRSS before it), what the worker still holds afterwards
(VmRSS after minus before), and the peak growth as a multiple of the body.
The bounds under test: a token endpoint body of at most 16 KB and 100 fields,
a search, count, query or service body of at most 1 MB, and a JSON body of at
most one value per 16 bytes (or 8,192 values), all checked before parsing.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))

from servers import chunked, exchange, gunicorn_server, memory_kib, reset_peak  # noqa: E402

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


def repeated(unit, size, head=b"", tail=b""):
    """``head`` + ``unit`` repeated to about ``size`` bytes + ``tail``."""
    return head + unit * ((size - len(head) - len(tail)) // len(unit)) + tail


def bodies(size):
    """(label, path, content type, body, chunked) of each refused body."""
    pairs = repeated(b"a=&", size, tail=b"grant_type=client_credentials")
    lists = repeated(b"[],", size, b"[", b"[]]")
    objects = repeated(b"{},", size, b"[", b"{}]")
    search = "/rest/entities/Customer/search"
    return [
        ("token form, empty pairs", "/oauth2/token", FORM, pairs, False),
        ("token form, chunked", "/oauth2/token", FORM, pairs, True),
        ("revoke form, empty pairs", "/oauth2/revoke", FORM, pairs, False),
        ("introspect form, empty pairs", "/oauth2/introspect", FORM, pairs, False),
        ("search [[],[],...]", search, JSON, lists, False),
        ("search [[],[],...], chunked", search, JSON, lists, True),
        ("search 1 MB of [[],[],...]", search, JSON, repeated(b"[],", 1000000, b"[", b"[]]"), False),
        ("count [[],[],...]", search + "/count", JSON, lists, False),
        ("bulk create [[],[],...]", "/rest/entities/Customer", JSON, lists, False),
        ("bulk create [{},{},...]", "/rest/entities/Customer", JSON, objects, False),
        ("bulk update [{},{},...]", "/rest/entities/Customer", JSON, objects, False),
        # Parsed: as many values as the bound lets through, each a Decimal.
        ("bulk create [1.50000000000001,...]", "/rest/entities/Customer", JSON,
         repeated(b"1.50000000000001,", size, b"[", b"1]"), False),
    ]


def send(server, method, path, content_type, body, is_chunked):
    """Send one request; the answer's status."""
    framing = "Transfer-Encoding: chunked" if is_chunked else f"Content-Length: {len(body)}"
    head = (f"{method} {path} HTTP/1.1\r\nHost: {server.host}\r\nConnection: close\r\n"
            f"Authorization: Bearer {server.token}\r\nContent-Type: {content_type}\r\n"
            f"{framing}\r\n\r\n").encode()
    answer = exchange(server, head + (chunked(body) if is_chunked else body))
    return int(answer.split(b" ", 2)[1]) if answer else 0


def measure(server, size):
    """[(label, status, body bytes, peak growth KiB, retained KiB)] for each body."""
    pid, = server.worker_pids()
    send(server, "POST", "/rest/entities/Customer/search", JSON, b'{"filter": {}}', False)
    results = []
    for label, path, content_type, body, is_chunked in bodies(size):
        method = "PUT" if label.startswith("bulk update") else "POST"
        time.sleep(0.2)
        before = memory_kib(pid, "VmRSS")
        if not reset_peak(pid):
            raise RuntimeError("cannot reset the worker's peak RSS (/proc/<pid>/clear_refs)")
        status = send(server, method, path, content_type, body, is_chunked)
        time.sleep(0.2)
        results.append((label, status, len(body), memory_kib(pid, "VmHWM") - before,
                        memory_kib(pid, "VmRSS") - before))
    return results


def report(results):
    lines = [f"{'body':<36}{'answer':>7}{'size':>10}{'peak growth':>13}{'retained':>10}{'x body':>8}"]
    for label, status, size, peak, retained in results:
        lines.append(f"{label:<36}{status:>7}{size / 1e6:>7.2f} MB{peak / 1024:>9.1f} MiB"
                     f"{retained / 1024:>6.1f} MiB{peak * 1024 / size:>8.1f}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=9.9)
    parser.add_argument("--database", help="a PostgreSQL URL (default: SQLite in a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="restsvc-bodies-") as directory:
        directory = Path(directory)
        url = args.database or f"sqlite:///{directory}/restsvc.db"
        with gunicorn_server(directory, url, {"svc.demo-data": True}) as server:
            print(f"database: {url.split(':')[0]}, one gunicorn worker")
            print(report(measure(server, int(args.size_mb * 1e6))))


if __name__ == "__main__":
    main()
