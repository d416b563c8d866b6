"""Worker memory while gunicorn streams large files through restsvc.

    python tests/measure_file_memory.py [--size-mib 1024] [--storage fs|s3]

Starts restsvc under gunicorn (one worker, SQLite and file storage in a
temporary directory, or an S3-compatible storage on moto's server with the
default part size) and moves one file of SIZE MiB four ways: raw upload,
multipart upload, full download, range download. For each it prints the
worker's peak RSS (VmHWM, reset before the transfer) minus its RSS before the
transfer. Content is checked by SHA-256 both ways. Not collected by pytest;
tests/test_files_gunicorn.py runs the same measurement with a smaller file.
"""
import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import (gunicorn_server, memory_kib, new_bucket,  # noqa: E402
                     object_storage_settings, reset_peak, s3_server)

MIB = 1 << 20
BLOCK = os.urandom(MIB)
BOUNDARY = "measure-boundary-7d1c"


@dataclass
class Measurement:
    label: str
    baseline_kib: int
    growth_kib: int
    seconds: float


def content(size):
    """``size`` bytes, a MiB at a time, without holding more than one block."""
    whole, rest = divmod(size, MIB)
    for _ in range(whole):
        yield BLOCK
    if rest:
        yield BLOCK[:rest]


def _send(server, path, headers, pieces, length):
    conn = server.connection()
    try:
        conn.putrequest("POST", path)
        for name, value in {**server.auth(), **headers, "Content-Length": str(length)}.items():
            conn.putheader(name, value)
        conn.endheaders()
        for piece in pieces:
            conn.send(piece)
        response = conn.getresponse()
        body = response.read()
        assert response.status == 201, (response.status, body)
        return json.loads(body)
    finally:
        conn.close()


def upload_raw(server, size):
    return _send(server, "/rest/files?name=big.bin", {"Content-Type": "application/octet-stream"},
                 content(size), size)


def upload_multipart(server, size):
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"big.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()

    def pieces():
        yield head
        yield from content(size)
        yield tail
    return _send(server, "/rest/files", {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
                 pieces(), len(head) + size + len(tail))


def download(server, ref, headers=None):
    """(status, bytes received, sha256) reading the body a MiB at a time."""
    conn = server.connection()
    try:
        conn.request("GET", f"/rest/files?fileRef={quote(ref, safe='')}",
                     headers={**server.auth(), **(headers or {})})
        response = conn.getresponse()
        digest, received = hashlib.sha256(), 0
        while chunk := response.read(MIB):
            digest.update(chunk)
            received += len(chunk)
        return response.status, received, digest.hexdigest()
    finally:
        conn.close()


def sha256_of(pieces):
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    return digest.hexdigest()


def measure(server, size):
    """Move a file of ``size`` bytes four ways; return the Measurements."""
    pid, = server.worker_pids()
    expected = sha256_of(content(size))
    warm = upload_multipart(server, 1000)      # first requests import and allocate what they need
    download(server, warm["fileRef"], {"Range": "bytes=1-10"})
    results = []

    def measured(label, action):
        baseline = memory_kib(pid, "VmRSS")
        if not reset_peak(pid):
            raise RuntimeError("cannot reset the worker's peak RSS (/proc/<pid>/clear_refs)")
        start = time.monotonic()
        outcome = action()
        results.append(Measurement(label, baseline, memory_kib(pid, "VmHWM") - baseline,
                                   time.monotonic() - start))
        return outcome

    raw = measured("raw upload", lambda: upload_raw(server, size))
    multipart = measured("multipart upload", lambda: upload_multipart(server, size))
    assert raw["size"] == multipart["size"] == size
    full = measured("full download", lambda: download(server, raw["fileRef"]))
    assert full == (200, size, expected), full
    status, received, _ = measured("range download", lambda: download(
        server, multipart["fileRef"], {"Range": f"bytes=1-{size - 2}"}))
    assert (status, received) == (206, size - 2)
    return results


def report(results, size):
    lines = [f"file size {size / MIB:.0f} MiB, one gunicorn worker",
             f"{'transfer':<18}{'RSS before':>12}{'peak growth':>13}{'time':>9}{'MiB/s':>8}"]
    for m in results:
        lines.append(f"{m.label:<18}{m.baseline_kib / 1024:>9.1f} MiB{m.growth_kib / 1024:>9.1f} MiB"
                     f"{m.seconds:>8.1f}s{size / MIB / m.seconds:>8.0f}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--storage", choices=("fs", "s3"), default="fs")
    args = parser.parse_args()
    size = args.size_mib * MIB
    with tempfile.TemporaryDirectory(prefix="restsvc-measure-") as directory:
        directory = Path(directory)
        settings = {"svc.rest.max-file-size": f"{2 * args.size_mib}MB", "svc.demo-data": False}
        with ExitStack() as stack:
            if args.storage == "s3":
                endpoint = stack.enter_context(s3_server(directory / "s3"))
                settings.update(object_storage_settings(endpoint, new_bucket(endpoint)))
                del settings["svc.file-storage.objects.part-size"]
            server = stack.enter_context(gunicorn_server(
                directory, f"sqlite:///{directory}/restsvc.db", settings))
            print(f"storage: {args.storage}")
            print(report(measure(server, size), size))


if __name__ == "__main__":
    main()
