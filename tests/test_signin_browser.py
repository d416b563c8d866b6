"""End to end in headless Chromium: a static single-page app (tests/fixtures/spa)
runs the authorization code flow with PKCE as demo-spa, the user signs in
through restsvc's form, and the app calls the API, refreshes and signs out.
Chromium is driven over the DevTools protocol on a pipe (no extra packages)."""
import functools
import json
import os
import shutil
import subprocess
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from test_docs_page import CHROMIUM_FLAGS

SPA = Path(__file__).parent / "fixtures" / "spa"


class SpaFiles(SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/callback") or self.path.startswith("/?"):
            self.path = "/index.html"
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def spa_origin():
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(SpaFiles, directory=str(SPA)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, chromium, profile):
        to_browser, self._commands = os.pipe()
        self._answers, from_browser = os.pipe()
        command = " ".join([chromium, *CHROMIUM_FLAGS, "--remote-debugging-pipe",
                            f"--user-data-dir={profile}", "about:blank"])
        self.process = subprocess.Popen(
            ["bash", "-c", f"exec {command} 3<&{to_browser} 4>&{from_browser}"],
            pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL,
            stderr=open(f"{profile}.log", "wb"))
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0

    def call(self, method, session=None, **params):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._answers, 65536)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(answer["error"])
                return answer["result"]

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate", session, expression=expression,
                           returnByValue=True)
        return result["result"].get("value")

    def close(self):
        self.process.kill()
        self.process.wait()
        os.close(self._commands)
        os.close(self._answers)


def test_single_page_app_signs_in_calls_refreshes_and_signs_out(database_url, tmp_path,
                                                                 spa_origin):
    from servers import gunicorn_server
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium package is not installed (apt-get install chromium)")
    overrides = {"svc.cors.allowed-origins": spa_origin}
    with gunicorn_server(tmp_path / "server", database_url, overrides) as server:
        browser = DevTools(chromium, tmp_path / "profile")
        try:
            target = browser.call("Target.createTarget",
                                  url=f"{spa_origin}/?server={server.base_url}")["targetId"]
            session = browser.call("Target.attachToTarget", targetId=target,
                                   flatten=True)["sessionId"]
            signed_in, title, deadline = False, "", time.monotonic() + 60
            while title not in ("done", "failed") and time.monotonic() < deadline:
                time.sleep(0.2)
                page = browser.evaluate(session, "JSON.stringify({title: document.title, "
                                                 "form: !!document.getElementById('signin'), "
                                                 "url: location.href})") or "{}"
                page = json.loads(page)
                title = page.get("title", "")
                if page.get("form") and not signed_in:
                    assert page["url"].startswith(f"{server.base_url}/oauth2/authorize?")
                    browser.evaluate(session, "document.getElementById('username').value='alice';"
                                              "document.getElementById('password').value="
                                              "'alice-password';"
                                              "document.getElementById('signin').submit()")
                    signed_in = True
            output = browser.evaluate(session, "document.getElementById('out').textContent")
        finally:
            browser.close()
    assert title == "done", output
    result = json.loads(output)
    assert result == {"stateMatches": True, "user": "alice", "rotated": True, "orders": 200,
                      "revoke": 200, "afterSignOut": 401}
