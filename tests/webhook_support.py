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
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.received.append((dict(self.headers), body))
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
