"""The vendor's JavaScript client, unchanged, against restsvc under gunicorn:
it signs in with a password, loads and updates a Product (UUID id), a Tag
(integer id the database assigns) and a Country (string id the application
assigns), and creates and deletes a Tag.

The client is the npm package ``@haulmont/jmix-rest`` (``.ci/run`` installs
it under ``.ci/node`` with openapi-typescript); without node or the package
the test is skipped and says so."""
import json
import shutil
import subprocess

import pytest

from conftest import REPO
from servers import gunicorn_server

PACKAGE = REPO / ".ci" / "node" / "node_modules" / "@haulmont" / "jmix-rest"
SCRIPT = REPO / "tests" / "js" / "vendor_client.js"


def node():
    tool = shutil.which("node")
    if tool is None:
        pytest.skip("node is not installed (apt-get install nodejs npm)")
    if not (PACKAGE / "package.json").exists():
        pytest.skip("@haulmont/jmix-rest is not installed "
                    "(npm install --prefix .ci/node @haulmont/jmix-rest)")
    return tool


def test_the_vendor_client_loads_and_updates_each_id_kind(database_url, tmp_path):
    tool = node()
    with gunicorn_server(tmp_path, database_url) as server:
        status, body = server.request("GET", "/rest/entities/Product?limit=1&sort=name")
        assert status == 200, body
        [product] = json.loads(body)
        run = subprocess.run([tool, str(SCRIPT), str(PACKAGE), server.base_url, product["id"]],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr + server.log()
        seen = json.loads(run.stdout)
        status, body = server.request("GET", f"/rest/entities/Tag/{seen['tag']['id']}")
        stored_tag = json.loads(body)
    assert seen["token"] is True
    assert seen["product"]["id"] == product["id"]
    assert seen["product"]["name"] == f"{product['name']} (js)"
    assert seen["product"]["_entityName"] == "Product"
    assert seen["tag"]["id"] == "1" and seen["tag"]["name"].endswith("-js")
    assert stored_tag["name"] == seen["tag"]["name"]
    assert seen["country"] == {"_entityName": "Country", "_instanceName": "Deutschland",
                               "id": "DE", "version": 2, "name": "Deutschland"}
    assert seen["created"]["name"] == "made-by-js" and seen["created"]["id"].isdigit()
    assert seen["deletedStatus"] == 404
