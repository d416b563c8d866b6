"""restsvc under a real gunicorn process, for what only a server shows:
streaming through sockets, worker memory, clients that go away."""
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, suppress

import yaml

from conftest import _drop_keys, basic, shipped_config


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port, process, log_path):
        self.host, self.port = "127.0.0.1", port
        self.process = process
        self.log_path = log_path
        self.token = None

    @property
    def base_url(self):
        return f"http://{self.host}:{self.port}"

    def connection(self, timeout=300):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        conn = self.connection()
        try:
            conn.request(method, path, body=body, headers={**self.auth(), **(headers or {})})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def auth(self):
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def worker_pids(self):
        """gunicorn's workers are the children of the process we started."""
        path = f"/proc/{self.process.pid}/task/{self.process.pid}/children"
        with open(path) as f:
            return [int(pid) for pid in f.read().split()]

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def _write_config(directory, database_url, overrides):
    # No delivery worker or stream process beside the server unless a test
    # asks for one: the server's children are then its gunicorn workers only
    # (worker_pids).
    values = {"svc.datasource.url": database_url, "svc.data-dir": str(directory),
              "svc.webhooks.deliver-in-serve": False, "svc.events.streams-in-serve": False,
              **(overrides or {})}
    config = shipped_config()
    _drop_keys(config, values)
    path = directory / "server.yaml"
    path.write_text(yaml.safe_dump({**config, **values}))
    return path


def launch(directory, database_url, overrides=None, workers=1, timeout=300, serve_args=(),
           port=None):
    """Start ``restsvc serve`` on a free port (or ``port``) with the shipped demo
    settings plus ``overrides``, without a drain on SIGTERM unless ``serve_args``
    asks for one; ``wait_until_ready`` waits for it."""
    directory.mkdir(parents=True, exist_ok=True)
    config = _write_config(directory, database_url, overrides)
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESTSVC_")}
    log_path = directory / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "restsvc.cli", "--config", str(config), "serve",
             "--port", str(port), "--workers", str(workers), "--timeout", str(timeout),
             "--drain", "0", *serve_args],
            cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)
    return Server(port, process, log_path)


def wait_until_ready(server, seconds=60, client=("demo-client", "demo-secret")):
    """Wait for the server to answer; keep a token of ``client`` (the demo's
    full-access one by default) on it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            status, body = server.request(
                "POST", "/oauth2/token", b"grant_type=client_credentials",
                {"Authorization": basic(*client),
                 "Content-Type": "application/x-www-form-urlencoded"})
            assert status == 200, body
            server.token = json.loads(body)["access_token"]
            return server
        except OSError:
            if server.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start:\n" + server.log()) from None
            time.sleep(0.2)


def stop(server):
    server.process.terminate()
    server.process.wait(timeout=20)


@contextmanager
def gunicorn_server(directory, database_url, overrides=None, workers=1, timeout=300,
                    serve_args=()):
    """One real server for the duration of a ``with`` block."""
    server = launch(directory, database_url, overrides, workers, timeout, serve_args)
    try:
        yield wait_until_ready(server)
    finally:
        stop(server)


def trickle(server, body_size, pieces, interval, path="/rest/files?name=slow.bin"):
    """Send an upload's body ``pieces`` at a time, ``interval`` seconds apart;
    return (status, body) of the answer once the whole body is sent."""
    sock = socket.create_connection((server.host, server.port), timeout=120)
    with sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                     f"Authorization: Bearer {server.token}\r\n"
                     f"Content-Type: application/octet-stream\r\n"
                     f"Content-Length: {body_size}\r\n\r\n".encode())
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(interval)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def chunked(body, size=1 << 16):
    """``body`` in HTTP/1.1 chunked transfer coding."""
    out = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                   for i in range(0, len(body), size))
    return out + b"0\r\n\r\n"


def exchange(server, request):
    """Send raw request bytes; the raw answer. The server may answer (413) and
    close before it has read the whole body."""
    with socket.create_connection((server.host, server.port), timeout=120) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while True:
            try:
                part = sock.recv(65536)
            except ConnectionResetError:
                break
            if not part:
                break
            data += part
    return data


def memory_kib(pid, field):
    """VmRSS (now) or VmHWM (peak since start or the last reset) of a process."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def reset_peak(pid):
    """Start VmHWM afresh (Linux clear_refs); False where the kernel does not allow it."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def wait_for_port(port, process, log_path, what, seconds):
    """Wait until ``process`` accepts connections on ``port``; RuntimeError with its log if not."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start:\n"
                                   + log_path.read_text(errors="replace")) from None
            time.sleep(0.1)


S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "restsvc-test", "AWS_SECRET_ACCESS_KEY": "restsvc-test",
                  "AWS_DEFAULT_REGION": "us-east-1"}


def s3_server_missing():
    """Why no S3-compatible test server can start here, or None when one can."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError as exc:
        return f"S3-compatible storage needs boto3 and moto[server] ({exc.name} is missing): " \
               f"pip install -e '.[test,s3]'"
    return None


@contextmanager
def s3_server(directory, seconds=30):
    """moto's S3 server on a free port; yields its endpoint URL. The tests'
    processes get the credentials it accepts from the environment."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    os.environ.update(S3_CREDENTIALS)
    log_path = directory / "s3.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                    "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        wait_for_port(port, process, log_path, "the S3 test server", seconds)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=20)


def new_bucket(endpoint):
    """A fresh bucket on the test S3 server; returns its name."""
    import uuid

    import boto3
    name = f"restsvc-{uuid.uuid4().hex[:20]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def object_storage_settings(endpoint, bucket, name="objects", default=True):
    """Dotted settings of an S3 storage ``name`` on the test server."""
    prefix = f"svc.file-storage.{name}"
    values = {f"{prefix}.type": "s3", f"{prefix}.endpoint": endpoint,
              f"{prefix}.bucket": bucket, f"{prefix}.key-prefix": "restsvc/",
              f"{prefix}.part-size": "5MB"}
    if default:
        values["svc.file-storage.default"] = name
    return values


class TcpRelay:
    """A TCP relay from a local port to ``target`` that the test can cut and
    restore: the way to make one instance's database unreachable while the
    database itself, shared with others, stays up."""

    def __init__(self, target, port=None):
        self.target = target
        self.port = port or free_port()
        self._connections = []
        self._lock = threading.Lock()
        self._listener = None

    def start(self):
        self._listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()
        return self

    def cut(self):
        """Refuse new connections and break the open ones."""
        # shutdown wakes the accept() blocked in the relay's thread; close alone
        # would leave it accepting one more connection.
        with suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in self._connections:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._connections.clear()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return                        # cut
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass                              # the relay was cut or a side closed
        finally:
            with suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


HAPROXY_CONFIG = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 3s
frontend restsvc
    bind 127.0.0.1:{port}
    default_backend instances
backend instances
    balance roundrobin
    option httpchk GET /health/ready
    http-check expect status 200
    default-server inter {interval_ms}ms fall 2 rise 2
{servers}
"""


@contextmanager
def haproxy(directory, backends, interval_ms=300):
    """HAProxy (round robin, active checks of /health/ready) in front of
    ``backends`` ((host, port) pairs); yields its base URL."""
    port = free_port()
    servers = "\n".join(f"    server instance{i} {host}:{backend_port} check"
                        for i, (host, backend_port) in enumerate(backends))
    config = directory / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, interval_ms=interval_ms, servers=servers))
    log_path = directory / "haproxy.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process, log_path, "HAProxy", 10)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
