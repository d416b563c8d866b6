"""Clients generated from the documents, as a new user would make them:
openapi-python-client (PyPI), openapi-typescript and @hey-api/openapi-ts (npm;
its zod module loads on Node) take the generic and the detailed document with
no warning and keep every operation; one
generated Python client, unchanged, creates an order with its lines,
searches with a filter, uploads a file and downloads an XLSX report.

Both tools are test tools: openapi-python-client comes with the ``test``
extra, the npm tools from npm (``.ci/run`` installs them under
``.ci/node``); a test whose tool is missing is skipped and says so."""
import datetime
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from conftest import REPO, get_token

DOCUMENTS = ("openapi", "openapiDetailed")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
WARNING = re.compile(r"warn", re.IGNORECASE)
XLSX_MAGIC = b"PK\x03\x04"
ORDERS_REPORT = "e543fb9b-41fc-4c99-869f-146ed717f035"


def python_generator():
    tool = shutil.which("openapi-python-client", path=f"{sys.prefix}/bin")
    if tool is None:
        pytest.skip("openapi-python-client is not installed (pip install -e '.[test]')")
    return tool


def npm_tool(name, packages):
    """A generator installed under .ci/node (``.ci/run`` installs them), or skip."""
    local = REPO / ".ci" / "node" / "node_modules" / ".bin" / name
    if not local.exists() or shutil.which("node") is None:
        pytest.skip(f"{name} is not installed (npm install --prefix .ci/node {packages}; "
                    f".ci/run does it)")
    return str(local)


def run_generator(command, **options):
    """Run a generator; it must succeed without a warning."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **options)
    log = result.stdout + result.stderr
    assert result.returncode == 0 and not WARNING.search(log), log


def operations(document):
    return {op["operationId"] for methods in document["paths"].values()
            for method, op in methods.items() if method in METHODS}


@pytest.fixture
def documents(client, tmp_path):
    """The documents as the full-access demo client fetches them, written to files."""
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    written = {}
    for name in DOCUMENTS:
        response = client.get(f"/rest/docs/{name}.json", headers=auth)
        assert response.status_code == 200
        path = tmp_path / f"{name}.json"
        path.write_bytes(response.data)
        written[name] = (path, response.json)
    return written


def generate_python(source, output):
    # The generator formats its output with ruff from the same environment,
    # found on PATH: put this interpreter's scripts first even when the
    # environment is not activated.
    path = f"{sys.prefix}/bin{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run([python_generator(), "generate", "--path", str(source),
                             "--output-path", str(output), "--meta", "none"],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PATH": path})
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("name", DOCUMENTS)
def test_openapi_python_client_generates_every_operation_without_a_warning(
        documents, tmp_path, name):
    source, document = documents[name]
    output = tmp_path / "client"
    status, log = generate_python(source, output)
    assert status == 0 and not WARNING.search(log), log
    # One module per operation: none dropped.
    modules = [path for path in (output / "api").rglob("*.py") if path.name != "__init__.py"]
    assert len(modules) == len(operations(document)) > 50


@pytest.mark.parametrize("name", DOCUMENTS)
def test_openapi_typescript_generates_every_operation_without_a_warning(
        documents, tmp_path, name):
    tool = npm_tool("openapi-typescript", "openapi-typescript")
    source, document = documents[name]
    output = tmp_path / "schema.ts"
    run_generator([tool, str(source), "-o", str(output)])
    typed = set(re.findall(r'^\s+(?:get|put|post|delete|head): operations\["([^"]+)"\];$',
                           output.read_text(), re.MULTILINE))
    assert typed == operations(document)


@pytest.mark.parametrize("name", DOCUMENTS)
def test_hey_api_generates_every_operation_without_a_warning_and_its_zod_module_loads(
        documents, tmp_path, name):
    tool = npm_tool("openapi-ts", "@hey-api/openapi-ts zod typescript@5")
    source, document = documents[name]
    output = tmp_path / "client"
    run_generator([tool, "-i", str(source), "-o", str(output), "-p", "@hey-api/client-fetch",
                   "zod", "@hey-api/typescript", "@hey-api/sdk"], cwd=tmp_path)
    functions = re.findall(r"^export const (\w+) = ", (output / "sdk.gen.ts").read_text(),
                           re.MULTILINE)
    assert len(functions) == len(operations(document))
    # The zod schemas compile and load on Node (an ECMAScript-invalid pattern would throw).
    loaded = subprocess.run(["node", str(REPO / "tests" / "js" / "load_zod.mjs"), str(output),
                             str(REPO / ".ci" / "node" / "node_modules")],
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert int(loaded.stdout.split()[-1]) > 50


@pytest.fixture
def generated(documents, tmp_path, monkeypatch):
    """The detailed document's Python client, generated now and imported."""
    package = f"restsvc_client_{uuid.uuid4().hex[:8]}"
    status, log = generate_python(documents["openapiDetailed"][0], tmp_path / package)
    assert status == 0, log
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda module: importlib.import_module(f"{package}.{module}")
    for module in [m for m in sys.modules if m.startswith(package)]:
        del sys.modules[module]


def test_a_generated_python_client_orders_searches_uploads_and_downloads_a_report(
        app, generated):
    import httpx
    from werkzeug.test import Client as TestClient
    api = generated("api")
    models, types = generated("models"), generated("types")
    client = generated("client").AuthenticatedClient(
        base_url="http://localhost", token=get_token(TestClient(app)),
        httpx_args={"transport": httpx.WSGITransport(app=app)})
    customer = importlib.import_module(f"{api.__name__}.customer.get_rest_entities_customer") \
        .sync(client=client, limit=1)[0]
    product = importlib.import_module(f"{api.__name__}.product.get_rest_entities_product") \
        .sync(client=client, limit=1)[0]

    def operation(tag, name):
        return importlib.import_module(f"{api.__name__}.{tag}.{name}")

    number = f"GEN-{uuid.uuid4().hex[:8]}"
    created = operation("order", "post_rest_entities_order").sync_detailed(
        client=client, response_fetch_plan="order-with-details", body=models.OrderInput(
            number=number, date=datetime.date(2024, 5, 1),
            customer=models.CustomerReference(id=customer.id),
            lines=[models.OrderLineInput(product=models.ProductReference(id=product.id),
                                         quantity=3)]))
    assert created.status_code == 201, created.content
    order = created.parsed
    assert isinstance(order, models.Order) and order.number == number
    assert [line.quantity for line in order.lines] == [3]

    found = operation("order", "get_rest_entities_order_search").sync(
        client=client, filter_=json.dumps({"conditions": [
            {"property": "number", "operator": "=", "value": number}]}))
    assert [o.id for o in found] == [order.id]

    content = bytes(range(256)) * 10
    stored = operation("files", "post_rest_files").sync(
        client=client, name="bytes.bin", body=types.File(payload=io.BytesIO(content)))
    assert isinstance(stored, models.FileInfo) and stored.size == len(content)
    downloaded = operation("files", "get_rest_files").sync(client=client, file_ref=stored.file_ref)
    assert downloaded.payload.read() == content

    report = operation("reports", "post_rest_reports_run_report_id").sync_detailed(
        report_id=uuid.UUID(ORDERS_REPORT), client=client, body=models.RunBody(
            template="XLSX", parameters=[
                models.RunBodyParametersItem(name="from", value="2024-01-01"),
                models.RunBodyParametersItem(name="to", value="2024-12-31")]))
    assert report.status_code == 200, report.content
    assert report.parsed.payload.read().startswith(XLSX_MAGIC)


def test_the_documents_pass_what_the_generators_need(client):
    """What made generators drop or mistype operations, checked on the documents."""
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    document = client.get("/rest/docs/openapiDetailed.json", headers=auth).json
    text = json.dumps(document)
    assert "(?i" not in text and '"content": {"*/*"' not in text
    upload = document["paths"]["/rest/files"]["post"]["requestBody"]["content"]
    assert upload["application/octet-stream"]["schema"]["format"] == "binary"
    download = document["paths"]["/rest/files"]["get"]["responses"]["200"]["content"]
    assert next(iter(download)) == "application/octet-stream"
    run = document["paths"]["/rest/reports/run/{reportId}"]["post"]["responses"]["200"]
    assert next(iter(run["content"])) == "application/octet-stream"
    parameters = [p for methods in document["paths"].values() for op in methods.values()
                  for p in op.get("parameters", ())]
    assert all("content" not in p for p in parameters)
