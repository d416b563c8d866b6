"""Exports of lists, searches and predefined queries as CSV, NDJSON and one
JSON array (restsvc/docs/data.md "Export")."""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from conftest import get_token, shipped_config
from restsvc import ResourceRole, RowLevelRole

ARRAY_TYPE = "application/vnd.restsvc.array+json"
# Numbers as the JSON text has them: what a CSV cell must show.
_TEXTS = json.JSONDecoder(parse_float=str, parse_int=str)

GOLD_FILTER = {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]}
NO_EMAIL = ResourceRole("t-no-email", entities={"Customer": "read", "Order": "read"},
                        attributes={"Customer": dict.fromkeys(
                            ("name", "grade", "birthDate", "address", "createdDate", "version"),
                            "view"),
                                    "Order": {"*": "view"}})
GOLD_ONLY = RowLevelRole("t-gold", filters={"Customer": GOLD_FILTER})
UI_ONLY = ResourceRole("t-ui", entities={"Customer": "read"},
                       attributes={"Customer": {"*": "view"}}, scope=("UI",))


def _csv(response):
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Content-Type"] == "text/csv;charset=UTF-8"
    return list(csv.reader(io.StringIO(response.get_data(as_text=True), newline="")))


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _expected_rows(header, entities):
    """The CSV rows the JSON entities make: each column's JSON value's text."""
    rows = []
    for entity in entities:
        row = []
        for column in header:
            value = entity
            for name in column.split("."):
                value = value.get(name) if isinstance(value, dict) else None
            row.append(_cell(value))
        rows.append(row)
    return rows


def _leaves(entity, prefix=""):
    """The dotted paths of an entity's JSON values that are not collections."""
    for key, value in entity.items():
        if key.startswith("_") or isinstance(value, list):
            continue
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield prefix + key


def _json_list(client, auth, url):
    response = client.get(url, headers=auth)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


@pytest.mark.parametrize("path", [
    "/rest/entities/Customer?sort=name",
    "/rest/entities/Customer?fetchPlan=_local&sort=-grade,name&returnNulls=true",
    "/rest/entities/Order?fetchPlan=order-with-details&sort=-amount",
    "/rest/entities/Order?fetchPlan=_base&sort=customer.name,date",
    "/rest/entities/Product?fetchPlan=product-with-tags",
    f"/rest/entities/Customer/search?filter={quote(json.dumps(GOLD_FILTER))}&sort=birthDate",
    "/rest/queries/Customer/customersByGrades?grades=GOLD&grades=SILVER",
])
def test_csv_export_equals_the_json_list_row_for_row(client, auth, path):
    listed = _json_list(client, auth, path)
    table = _csv(client.get(f"{path}&format=csv", headers=auth))
    header, rows = table[0], table[1:]
    entities = _TEXTS.decode(listed.get_data(as_text=True))
    assert header[0] == "id" and len(rows) == len(entities) > 0
    assert rows == _expected_rows(header, entities)
    shown = {path for entity in entities for path in _leaves(entity)}
    assert shown <= set(header)     # a column for every attribute the JSON has


def test_csv_has_dotted_columns_for_to_one_references_and_no_collections(client, auth):
    header = _csv(client.get("/rest/entities/Order?fetchPlan=order-with-details&format=csv",
                             headers=auth))[0]
    assert {"id", "version", "customer.id", "customer.name", "customer.address.city"} <= set(header)
    assert not any(column.startswith("lines") for column in header)


@pytest.mark.parametrize("path", [
    "/rest/entities/Order?fetchPlan=order-with-details&sort=-amount",
    "/rest/entities/Customer?returnNulls=true",
    "/rest/entities/Product?fetchPlan=product-with-tags&sort=name",
    "/rest/queries/Customer/customersByGrades?grades=GOLD",
])
def test_ndjson_lines_equal_the_json_list_entities_byte_for_byte(client, auth, path):
    listed = _json_list(client, auth, path).get_data()
    response = client.get(path, headers={**auth, "Accept": "application/x-ndjson"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    body = response.get_data()
    assert body.endswith(b"\n") and b"[" + b",".join(body.split(b"\n")[:-1]) + b"]" == listed


@pytest.mark.parametrize("ask", [{"query": "&format=json"}, {"Accept": ARRAY_TYPE}])
def test_json_array_export_is_the_json_list_in_one_array(client, auth, ask):
    path = "/rest/entities/Order?fetchPlan=order-with-details&sort=date"
    listed = _json_list(client, auth, path).get_data()
    headers = {**auth, **({"Accept": ask["Accept"]} if "Accept" in ask else {})}
    response = client.get(path + ask.get("query", ""), headers=headers)
    assert response.status_code == 200 and response.get_data() == listed


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "application/json, text/csv;q=0.5"])
def test_json_accept_keeps_the_paged_list(client, auth, accept):
    headers = {**auth, **({"Accept": accept} if accept else {})}
    response = client.get("/rest/entities/Customer?limit=2", headers=headers)
    assert response.headers["Content-Type"].startswith("application/json")
    assert len(response.json) == 2 and "Link" in response.headers


def test_accept_text_csv_exports_a_post_search(client, auth):
    response = client.post("/rest/entities/Customer/search", json={"filter": GOLD_FILTER},
                           headers={**auth, "Accept": "text/csv"})
    listed = client.post("/rest/entities/Customer/search", json={"filter": GOLD_FILTER},
                         headers=auth).json
    table = _csv(response)
    assert [row[0] for row in table[1:]] == [entity["id"] for entity in listed]
    assert response.headers["Content-Disposition"].startswith('attachment; filename="Customer.csv"')


def test_export_is_not_capped_by_the_list_size_limits(make_app):
    from werkzeug.test import Client
    app = make_app({"svc.rest.default-max-fetch-size": 3, "svc.rest.max-response-entities": 20})
    client = Client(app)
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    assert client.get("/rest/entities/Order?limit=4", headers=auth).status_code == 400
    total = client.get("/rest/entities/Order/search/count?filter={}", headers=auth).json
    # Chunks of 3 rows; one whose orders, lines and products pass 20 entities is read again
    # smaller.
    lines = client.get("/rest/entities/Order?format=ndjson&sort=number&fetchPlan=order-with-details",
                       headers=auth).get_data(as_text=True).splitlines()
    numbers = [json.loads(line)["number"] for line in lines]
    assert len(numbers) == total > 3 and numbers == sorted(numbers)
    table = _csv(client.get("/rest/entities/Customer?format=csv&sort=name", headers=auth))
    assert len(table) - 1 == client.get("/rest/entities/Customer/search/count?filter={}",
                                        headers=auth).json


def test_export_keeps_a_given_limit_and_offset(client, auth):
    every = [e["id"] for e in client.get("/rest/entities/Customer?sort=name", headers=auth).json]
    table = _csv(client.get("/rest/entities/Customer?sort=name&offset=2&limit=5&format=csv",
                            headers=auth))
    assert [row[0] for row in table[1:]] == every[2:7]


def test_a_readers_export_hides_what_its_json_hides(client_with_roles):
    client, auth = client_with_roles(NO_EMAIL, row_level=(GOLD_ONLY,))
    path = "/rest/entities/Order?fetchPlan=order-with-details&sort=number"
    for url in (path, "/rest/entities/Customer?sort=name"):
        listed = _json_list(client, auth, url)
        table = _csv(client.get(f"{url}&format=csv", headers=auth))
        assert not any(column.endswith("email") for column in table[0])
        assert table[1:] == _expected_rows(table[0], _TEXTS.decode(listed.get_data(as_text=True)))
        ndjson = client.get(f"{url}&format=ndjson", headers=auth).get_data()
        assert b"[" + ndjson.rstrip(b"\n").replace(b"\n", b",") + b"]" == listed.get_data()
    grades = {row[table[0].index("grade")] for row in table[1:]}
    assert grades == {"GOLD"}


def test_an_export_of_an_entity_granted_only_in_another_scope_is_refused(client_with_roles):
    client, auth = client_with_roles(UI_ONLY)
    for ask in ("", "?format=csv", "?format=ndjson"):
        response = client.get(f"/rest/entities/Customer{ask}", headers=auth)
        assert response.status_code == 403 and response.json["error"] == "Reading forbidden"


@pytest.mark.parametrize("path, status", [
    ("/rest/entities/Customer?format=xml", 400),
    ("/rest/entities/Customer/search?filter={bad&format=csv", 400),
    ("/rest/entities/Customer?sort=name&after=forged&format=ndjson", 400),
    ("/rest/entities/Nope?format=csv", 404),
    ("/rest/queries/Customer/customersByGrades?format=csv", 400),
])
def test_a_bad_export_request_is_a_json_error(client, auth, path, status):
    response = client.get(path, headers=auth)
    assert response.status_code == status
    assert set(response.json) == {"error", "details"}


def test_csv_quotes_cells_and_guards_formulas(client, auth):
    names = ['=HYPERLINK("http://evil.example","x")', "+1+2", "-3", "@SUM(A1)",
             'Comma, "quote"\nand newline']
    for name in names:
        created = client.post("/rest/entities/Customer", json={"name": name, "email": "q@x.org"},
                              headers=auth)
        assert created.status_code == 201
    spec = quote(json.dumps({"conditions": [
        {"property": "email", "operator": "=", "value": "q@x.org"}]}))
    table = _csv(client.get(f"/rest/entities/Customer/search?filter={spec}&sort=name&format=csv",
                            headers=auth))
    cells = sorted(row[table[0].index("name")] for row in table[1:])
    assert cells == sorted(["'" + name if name[0] in "=+-@" else name for name in names])
    assert table[0][:2] == ["id", "version"]


def test_csv_numbers_keep_their_json_text_and_booleans_read_true_false(client, auth):
    listed = client.get("/rest/entities/Order?sort=number&limit=3", headers=auth)
    table = _csv(client.get("/rest/entities/Order?sort=number&limit=3&format=csv", headers=auth))
    amounts = [row[table[0].index("amount")] for row in table[1:]]
    assert amounts == [entity["amount"] for entity in _TEXTS.decode(listed.get_data(as_text=True))]
    users = _csv(client.get("/rest/entities/User?format=csv&fetchPlan=_local", headers=auth))
    assert {row[users[0].index("active")] for row in users[1:]} <= {"true", "false"}


def test_an_empty_export(client, auth):
    spec = quote(json.dumps({"conditions": [{"property": "name", "operator": "=", "value": "-"}]}))
    path = f"/rest/entities/Customer/search?filter={spec}"
    assert client.get(f"{path}&format=ndjson", headers=auth).get_data() == b""
    assert client.get(f"{path}&format=json", headers=auth).json == []
    assert len(_csv(client.get(f"{path}&format=csv", headers=auth))) == 1


def test_cli_export_writes_what_the_api_exports(app, client, auth, tmp_path):
    settings = shipped_config()
    settings["svc"]["datasource"] = {"url": app.settings.database_url}
    settings["svc"]["data-dir"] = str(tmp_path)
    config = tmp_path / "export.yaml"
    config.write_text(yaml.safe_dump(settings))
    spec = json.dumps(GOLD_FILTER)
    for form in ("csv", "ndjson"):
        done = subprocess.run(
            [sys.executable, "-m", "restsvc.cli", "--config", str(config), "export", "Customer",
             "--filter", spec, "--format", form, "--sort", "name"],
            capture_output=True, cwd=Path(__file__).resolve().parent.parent, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        api = client.get(f"/rest/entities/Customer/search?filter={quote(spec)}&sort=name"
                         f"&format={form}", headers=auth).get_data()
        assert done.stdout == api
