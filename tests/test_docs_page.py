"""GET /rest/docs: the detailed document in Swagger UI, every file served by
restsvc itself; rendered in a real headless Chromium where one is installed."""
import re
import shutil
import subprocess

import pytest
from werkzeug.test import Client

from restsvc.api import docs

OPEN_DOCS = {"svc.resource-server.anonymous-url-patterns": "/rest/docs/**"}
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")


@pytest.fixture
def open_client(make_app):
    return Client(make_app(OPEN_DOCS))


def test_page_loads_the_viewer_only_from_restsvc(open_client):
    response = open_client.get("/rest/docs")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    sources = re.findall(r'(?:src|href|data-url|data-token-url)="([^"]+)"', page)
    sources = [src for src in sources if src != "/oauth2/token"]
    assert sources and all(src.startswith("/rest/docs/") for src in sources), sources
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    for src in sources:
        served = open_client.get(src)
        assert served.status_code == 200, src
        assert served.mimetype in ("text/css", "text/javascript", "application/json",
                                   "image/png"), src


def test_page_and_its_files_open_without_a_token_but_the_documents_need_one(client):
    # The shipped settings: /rest/** needs a token, nothing is anonymous.
    page = client.get("/rest/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert 'data-token-url="/oauth2/token"' in page.get_data(as_text=True)
    assert client.get("/rest/docs/assets/swagger-ui-bundle.js").status_code == 200
    assert client.get("/rest/docs/assets/restsvc-init.js").status_code == 200
    icon = client.get("/rest/docs/assets/favicon-32x32.png")
    assert icon.status_code == 200 and icon.mimetype == "image/png"
    for document in ("openapi.json", "openapiDetailed.json", "openapiDetailed.yaml"):
        assert client.get(f"/rest/docs/{document}").status_code == 401, document
    assert client.get("/rest/docs/assets/..%2F..%2Fopenapi.json").status_code in (401, 404)


def test_page_links_its_favicon(client):
    page = client.get("/rest/docs").get_data(as_text=True)
    assert 'rel="icon"' in page and "/rest/docs/assets/favicon-32x32.png" in page


def test_only_the_viewer_files_are_served(open_client):
    assert open_client.get("/rest/docs/assets/swagger-ui.js").status_code == 404
    assert open_client.get("/rest/docs/assets/..%2Fcore.py").status_code == 404
    assert open_client.get("/rest/docs/assets/index.css").status_code == 404


def test_without_the_viewer_package_the_page_says_how_to_get_it(open_client, monkeypatch):
    monkeypatch.setattr(docs, "viewer_dir", lambda: None)
    page = open_client.get("/rest/docs").get_data(as_text=True)
    assert "pip install 'restsvc[docs]'" in page and "/rest/docs/openapiDetailed.json" in page
    assert open_client.get("/rest/docs/assets/swagger-ui-bundle.js").status_code == 404


def test_headless_chromium_renders_the_operations(database_url, tmp_path):
    # The page shows the public document first, then the detailed one once it
    # may fetch it: wait for the second (a one-shot DOM dump may catch the first).
    from servers import gunicorn_server
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium package is not installed (apt-get install chromium)")
    with gunicorn_server(tmp_path / "server", database_url, OPEN_DOCS) as server:
        browser = DevTools(chromium, tmp_path / "profile")
        try:
            browser.open(f"{server.base_url}/rest/docs")
            browser.wait_for(f"{OPERATIONS} > 100 && {PATHS}.includes('/rest/entities/Order')")
            paths = set(browser.evaluate(PATHS))
            assert {"/rest/entities/Order", "/rest/entities/Order/search",
                    "/rest/queries/Order/ordersBetween", "/oauth2/token"} <= paths, sorted(paths)
            assert "Authorize" in browser.evaluate("document.body.innerText")
        finally:
            browser.close()


class DevTools:
    """Chromium driven over its DevTools protocol on a pipe (--remote-debugging-pipe:
    it reads commands on fd 3 and writes answers on fd 4, NUL-separated JSON)."""

    def __init__(self, chromium, profile):
        import fcntl
        import os
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def place_pipe():
            # In the child: the pipe at fds 3 and 4, where chromium looks for it
            # (moved up first, so that neither overwrites the other).
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in (to_browser, from_browser)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)
        # close_fds=False: the pipe must survive to exec; Python's own fds are
        # not inheritable, so nothing else goes along.
        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             "about:blank"], close_fds=False, preexec_fn=place_pipe,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self.session = None

    def send(self, method, **params):
        import json
        import os
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                return answer["result"]

    def _message(self):
        import json
        import os
        while b"\0" not in self._buffer:
            chunk = os.read(self._read, 1 << 16)
            assert chunk, "chromium closed its DevTools pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        page = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"],
                                 flatten=True)["sessionId"]
        self.send("Page.navigate", url=url)

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True,
                           returnByValue=True)
        return result["result"].get("value")

    def wait_for(self, expression, seconds=60):
        import time
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError(f"never true in the page: {expression}")

    def close(self):
        self.process.kill()
        self.process.wait()


OPERATIONS = "document.querySelectorAll('.opblock').length"
PATHS = "[...document.querySelectorAll('[data-path]')].map(e => e.dataset.path)"
# What the Authorize dialog's button runs for the client credentials flow:
# the browser asks the token endpoint for a token with the client's id and secret.
SIGN_IN = """(() => {
  const schema = ui.authSelectors.definitionsToAuthorize()
    .find(definition => definition.has("clientCredentials")).get("clientCredentials");
  ui.authActions.authorizeApplication({schema, scopes: [], name: "clientCredentials",
                                      clientId: "demo-client", clientSecret: "demo-secret"});
  return true;
})()"""


def test_headless_chromium_signs_in_then_shows_the_callers_document_with_the_shipped_settings(
        database_url, tmp_path):
    from servers import gunicorn_server
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium package is not installed (apt-get install chromium)")
    with gunicorn_server(tmp_path / "server", database_url) as server:
        browser = DevTools(chromium, tmp_path / "profile")
        try:
            browser.open(f"{server.base_url}/rest/docs")
            # First: the API's title, how to sign in and what needs no token
            # (never "No operations defined in spec!").
            browser.wait_for("document.querySelector('.btn.authorize') !== null")
            browser.wait_for(f"{OPERATIONS} > 0")
            text = browser.evaluate("document.body.innerText")
            assert "restsvc project REST API" in text and "Authorize" in text
            assert "clientCredentials" in text and "No operations defined" not in text
            first = set(browser.evaluate(PATHS))
            assert "/oauth2/token" in first and "/rest/entities/Order" not in first
            assert browser.evaluate(
                "document.querySelector('link[rel=icon]').href").endswith("favicon-32x32.png")
            browser.evaluate(SIGN_IN)
            # Then: the detailed document, fetched with that token.
            assert browser.wait_for(f"{OPERATIONS} > 100 && {OPERATIONS}")
            paths = set(browser.evaluate(PATHS))
            assert {"/rest/entities/Order", "/rest/entities/Order/search",
                    "/rest/queries/Order/ordersBetween", "/oauth2/token"} <= paths
        finally:
            browser.close()
