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
    sources = re.findall(r'(?:src|href|data-url)="([^"]+)"', page)
    assert sources and all(src.startswith("/rest/docs/") for src in sources), sources
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    for src in sources:
        served = open_client.get(src)
        assert served.status_code == 200, src
        assert served.mimetype in ("text/css", "text/javascript", "application/json"), src


def test_page_needs_a_token_unless_the_docs_are_anonymous(client):
    assert client.get("/rest/docs").status_code == 401
    assert client.get("/rest/docs/assets/swagger-ui-bundle.js").status_code == 401


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
    from servers import gunicorn_server
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium package is not installed (apt-get install chromium)")
    with gunicorn_server(tmp_path / "server", database_url, OPEN_DOCS) as server:
        result = subprocess.run(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
             "--virtual-time-budget=30000", "--dump-dom", f"{server.base_url}/rest/docs"],
            capture_output=True, text=True, timeout=120)
    dom = result.stdout
    assert 'class="swagger-ui' in dom, result.stderr[-2000:]
    paths = set(re.findall(r'data-path="([^"]+)"', dom))
    assert {"/rest/entities/Order", "/rest/entities/Order/search",
            "/rest/queries/Order/ordersBetween", "/oauth2/token"} <= paths, sorted(paths)
    assert len(re.findall(r'class="opblock opblock-(?:get|post|put|delete|head)', dom)) > 100
    assert "Authorize" in dom      # the bearer token / OAuth 2 dialog of try-it-out
