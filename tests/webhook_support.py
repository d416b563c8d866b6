"""A webhook receiver for the tests: a local HTTP server that records what it
gets and answers what it is told, and the README's verification recipe."""
import hashlib
import hmac
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


# The README's recipe ("Webhooks"), as a receiver would write it.
def verify(secret, header, body, tolerance=300):
    fields = dict(part.split("=", 1) for part in header.split(","))
    signed = fields["t"].encode() + b"." + body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"]) and \
        abs(time.time() - int(fields["t"])) <= tolerance


class Receiver:
    """``answers``: statuses to give in turn (then 200); ``hold``: an Event the
    first request waits for before answering."""

    def __init__(self, answers=(), hold=None):
        self.answers = list(answers)
        self.hold = hold
        self.received = []          # (headers dict, body bytes)
        self.paths = []             # the request target of each
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.received.append((dict(self.headers), body))
                    receiver.paths.append(self.path)
                    first = len(receiver.received) == 1
                    status = receiver.answers.pop(0) if receiver.answers else 200
                if first and receiver.hold is not None:
                    receiver.hold.wait(60)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook?x=1"

    def ids(self):
        with self.lock:
            return [headers["Svc-Event-Id"] for headers, _ in self.received]

    def wait_for(self, count, seconds=60, step=None):
        """Until ``count`` requests came (calling ``step()`` meanwhile, if given)."""
        deadline = time.monotonic() + seconds
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"only {len(self.received)} deliveries came"
            if step is not None:
                step()
            time.sleep(0.02)

    def close(self):
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()


class Trickler:
    """A receiver that answers one byte every ``interval`` seconds, for
    ``seconds`` at most: each read comes well inside any per-read timeout."""

    def __init__(self, interval=0.2, seconds=20):
        self.requests = 0
        self.closed = threading.Event()
        trickler = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                trickler.requests += 1
                answer = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 10_000
                deadline = time.monotonic() + seconds
                try:
                    for byte in answer:
                        if time.monotonic() > deadline or trickler.closed.wait(interval):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                except OSError:
                    return

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/slow"

    def close(self):
        self.closed.set()
        self.server.shutdown()
        self.server.server_close()
