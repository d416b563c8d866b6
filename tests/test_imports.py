"""Import (issue 39): CSV and NDJSON rows through the one write path."""
import io
import json
import uuid

import pytest
import yaml

from conftest import demo_id, shipped_config
from restsvc import ResourceRole
from restsvc.cli import main as cli
from restsvc.data.write.history import HistoryItem
from restsvc.events.outbox import ChangeEvent

URL = "/rest/entities/Customer/import"
CSV = {"Content-Type": "text/csv"}
NDJSON = {"Content-Type": "application/x-ndjson"}


def post(client, auth, body, query="", headers=CSV, entity="Customer"):
    return client.post(f"/rest/entities/{entity}/import{query}", data=body,
                       headers={**auth, **headers})


def customers_named(client, auth, *names):
    found = client.post("/rest/entities/Customer/search", headers=auth, json={"filter": {
        "conditions": [{"property": "name", "operator": "in", "value": list(names)}]}})
    return {c["name"]: c for c in found.json}


def found_by(client, auth, entity, plan, name, value):
    """The one row of ``entity`` whose ``name`` is ``value``, along ``plan``."""
    [row] = client.post(f"/rest/entities/{entity}/search", headers=auth, json={
        "fetchPlan": plan,
        "filter": {"conditions": [{"property": name, "operator": "=", "value": value}]}}).json
    return row


GOOD_AND_BAD = ("name,email,grade,birthDate\n"
                "Ima Good,good@x.org,GOLD,1990-01-02\n"
                "Ima Bad,bad@x.org,PLATINUM,1991-01-01\n"
                "Ima Fine,fine@x.org,,\n")


def test_import_creates_rows_from_csv(client, auth):
    response = post(client, auth, "name,email,grade,birthDate\nIma Good,good@x.org,GOLD,1990-01-02\n"
                                  "Ima Fine,,,\n")
    assert response.status_code == 200, response.json
    assert response.json["created"] == 2 and response.json["failed"] == 0
    found = customers_named(client, auth, "Ima Good", "Ima Fine")
    assert found["Ima Good"]["grade"] == "GOLD" and found["Ima Good"]["birthDate"] == "1990-01-02"
    assert found["Ima Fine"].get("email") is None


def test_import_with_one_bad_row_writes_nothing(client, auth):
    response = post(client, auth, GOOD_AND_BAD)
    assert response.status_code == 400
    assert response.json["error"] == "Import failed"
    [bad] = response.json["details"]
    assert bad["line"] == 3
    assert bad["errors"][0]["path"] == "grade" and bad["errors"][0]["invalidValue"] == "PLATINUM"
    assert set(bad["errors"][0]) == {"message", "messageTemplate", "path", "invalidValue"}
    assert customers_named(client, auth, "Ima Good", "Ima Bad", "Ima Fine") == {}


def test_partial_import_keeps_the_good_rows_and_reports_the_bad(client, auth):
    response = post(client, auth, GOOD_AND_BAD, "?partial=true")
    assert response.status_code == 200
    assert (response.json["created"], response.json["failed"]) == (2, 1)
    assert [row["line"] for row in response.json["errors"]] == [3]
    assert set(customers_named(client, auth, "Ima Good", "Ima Bad", "Ima Fine")) == {
        "Ima Good", "Ima Fine"}


def test_dry_run_writes_nothing_and_reports_the_same_errors(client, auth):
    real = post(client, auth, GOOD_AND_BAD, "?partial=true&dryRun=true")
    refused = post(client, auth, GOOD_AND_BAD, "?dryRun=true")
    assert real.status_code == 200 and real.json["dryRun"] is True
    assert (real.json["created"], real.json["failed"]) == (2, 1)
    assert refused.status_code == 400
    assert refused.json["details"] == real.json["errors"] == post(
        client, auth, GOOD_AND_BAD).json["details"]
    assert customers_named(client, auth, "Ima Good", "Ima Fine") == {}


def test_validator_and_mandatory_errors_are_reported_per_line(client, auth):
    response = post(client, auth, "name,birthDate\n,1990-01-01\nFuture,2999-01-01\n")
    assert response.status_code == 400
    lines = {row["line"]: [e["path"] for e in row["errors"]] for row in response.json["details"]}
    assert lines == {2: ["name"], 3: ["birthDate"]}


def test_upsert_by_id_updates_stored_rows_and_creates_new_ones(client, auth):
    stored = demo_id("customer", 1)
    body = (json.dumps({"id": stored, "name": "Renamed By Import"}) + "\n\n"
            + json.dumps({"name": "New By Import", "grade": "SILVER"}) + "\n")
    response = post(client, auth, body, "?mode=upsert", NDJSON)
    assert response.status_code == 200, response.json
    assert (response.json["created"], response.json["updated"]) == (1, 1)
    row = client.get(f"/rest/entities/Customer/{stored}", headers=auth).json
    assert row["name"] == "Renamed By Import"
    assert customers_named(client, auth, "New By Import")["New By Import"]["grade"] == "SILVER"


def test_create_mode_refuses_a_row_whose_id_is_stored(client, auth):
    body = f"id,name\n{demo_id('customer', 1)},Twice\n"
    response = post(client, auth, body)
    assert response.status_code == 400 and response.json["details"][0]["line"] == 2


def test_upsert_by_natural_key_updates_the_row_with_that_key(client, auth):
    email = client.get(f"/rest/entities/Customer/{demo_id('customer', 2)}",
                       headers=auth).json["email"]
    body = f"email,name\n{email},Found By Email\nbrand.new@x.org,Made By Email\n"
    response = post(client, auth, body, "?mode=upsertByKey")
    assert response.status_code == 200, response.json
    assert (response.json["created"], response.json["updated"]) == (1, 1)
    found = customers_named(client, auth, "Found By Email", "Made By Email")
    assert found["Found By Email"]["id"] == demo_id("customer", 2)
    assert found["Made By Email"]["email"] == "brand.new@x.org"


def test_upsert_by_key_needs_a_declared_natural_key(client, auth):
    response = post(client, auth, "name\nX\n", "?mode=upsertByKey", entity="Order")
    assert response.status_code == 400 and "natural key" in response.json["details"]


def test_references_by_id_or_natural_key_and_members_as_array_columns(client, auth):
    customer = client.get(f"/rest/entities/Customer/{demo_id('customer', 3)}", headers=auth).json
    tags = client.get("/rest/entities/Tag", headers=auth).json[:2]
    body = ("number,date,customer.email,status\n"
            f"IMP-1,2024-05-01,{customer['email']},NEW\n")
    response = post(client, auth, body, entity="Order")
    assert response.status_code == 200, response.json
    order = found_by(client, auth, "Order", "order-with-details", "number", "IMP-1")
    assert order["customer"]["id"] == customer["id"]
    body = (f"name,sku,price,tags[0].name,tags[1].id\n"
            f"Imported Widget,IMP-SKU-1,12.50,{tags[0]['name']},{tags[1]['id']}\n")
    response = post(client, auth, body, entity="Product")
    assert response.status_code == 200, response.json
    product = found_by(client, auth, "Product", "product-with-tags", "sku", "IMP-SKU-1")
    assert sorted(t["id"] for t in product["tags"]) == sorted(t["id"] for t in tags)
    assert product["price"] in (12.5, "12.50", "12.5")


def test_embedded_values_as_dotted_columns(client, auth):
    body = "name,address.city,address.country.id\nLives Somewhere,Berlin,DE\n"
    response = post(client, auth, body)
    assert response.status_code == 200, response.json
    row = customers_named(client, auth, "Lives Somewhere")["Lives Somewhere"]
    assert row["address"]["city"] == "Berlin"


def test_missing_reference_is_a_row_error(client, auth):
    body = "number,date,customer.email\nIMP-2,2024-05-01,nobody@nowhere.example\n"
    response = post(client, auth, body, entity="Order")
    assert response.status_code == 400
    assert response.json["details"][0]["line"] == 2
    assert "customer" in response.json["details"][0]["errors"][0]["message"]


def test_reader_cannot_import(client, auth, reader_auth):
    response = post(client, reader_auth, "name\nSneaky\n")
    assert response.status_code == 403
    assert post(client, reader_auth, "x", headers={"Content-Type": "image/png"}).status_code == 403
    assert customers_named(client, auth, "Sneaky") == {}


def test_hidden_attribute_cannot_be_set_by_import(client_with_roles):
    role = ResourceRole("t-import-no-email", entities={"Customer": "*"},
                        attributes={"Customer": {"name": "modify", "grade": "modify"}})
    c, tester = client_with_roles(role)
    response = post(c, tester, "name,email\nHidden Email,h@x.org\n")
    assert response.status_code == 400
    assert response.json["error"] == "Unknown column" and "email" in response.json["details"]
    nd = post(c, tester, json.dumps({"name": "Json Hidden", "email": "h@x.org"}), "", NDJSON)
    assert nd.status_code == 200, nd.json
    found = c.post("/rest/entities/Customer/search", headers=tester, json={"filter": {
        "conditions": [{"property": "name", "operator": "=", "value": "Json Hidden"}]}}).json
    stored = HistoryItem.select().where(HistoryItem.entityId == found[0]["id"]).get()
    assert "h@x.org" not in json.dumps(stored.changes)


def test_history_and_change_events_are_written_per_row(app, client, auth):
    before = ChangeEvent.select().where(ChangeEvent.entity == "Customer").count()
    response = post(client, auth, "name\nHist One\nHist Two\nHist Three\n")
    assert response.status_code == 200
    ids = [c["id"] for c in customers_named(client, auth, "Hist One", "Hist Two",
                                            "Hist Three").values()]
    assert HistoryItem.select().where(HistoryItem.entityId.in_(ids),
                                      HistoryItem.kind == "CREATE").count() == 3
    assert ChangeEvent.select().where(ChangeEvent.entity == "Customer").count() == before + 3


@pytest.mark.parametrize("body, error", [
    ('name,email\n"Unclosed,x@y.org\n', "Malformed CSV"),
    ("name,shoeSize\nBig Foot,48\n", "Unknown column"),
    ("name,orders\nNo Orders,1\n", "Unknown column"),
    (b"name\n\xff\xfe\n", "Malformed import body"),
])
def test_bad_csv_is_a_clear_400(client, auth, body, error):
    response = post(client, auth, body)
    assert response.status_code == 400 and response.json["error"] == error


def test_wrong_type_and_short_rows_name_their_line(client, auth):
    response = post(client, auth, "name,birthDate\nWrong Date,1990-13-45\nShort\n")
    assert response.status_code == 400
    assert [row["line"] for row in response.json["details"]] == [2, 3]
    assert response.json["details"][0]["errors"][0]["path"] == "birthDate"


def test_ndjson_line_that_is_not_an_object_is_a_row_error(client, auth):
    response = post(client, auth, '{"name": "Fine"}\n[1, 2]\n{broken\n', "", NDJSON)
    assert response.status_code == 400
    assert [row["line"] for row in response.json["details"]] == [2, 3]


def test_body_over_the_import_limit_is_413(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    c = Client(make_app({"svc.rest.import-max-size": "1KB"}))
    token = {"Authorization": f"Bearer {get_token(c)}"}
    body = "name\n" + "".join(f"Row {i}\n" for i in range(500))
    response = post(c, token, body)
    assert response.status_code == 413 and "svc.rest.import-max-size" in response.json["details"]
    chunked = c.post(URL, input_stream=io.BytesIO(body.encode()),
                     headers={**token, **CSV, "Transfer-Encoding": "chunked"},
                     environ_overrides={"wsgi.input_terminated": True})
    assert chunked.status_code == 413
    assert customers_named(c, token, "Row 1") == {}


def test_reported_errors_are_bounded(make_app):
    from werkzeug.test import Client
    from conftest import get_token
    c = Client(make_app({"svc.rest.import-max-errors": 2}))
    token = {"Authorization": f"Bearer {get_token(c)}"}
    response = post(c, token, "name,grade\n" + "Bad,NOPE\n" * 5, "?partial=true")
    assert response.json["failed"] == 5 and len(response.json["errors"]) == 2
    assert response.json["errorsTruncated"] is True


@pytest.mark.parametrize("query, headers, status", [
    ("", {"Content-Type": "application/json"}, 415),
    ("?mode=upsert", {"Content-Type": "text/plain"}, 415),
    ("?mode=merge", CSV, 400),
    ("?format=xml", {"Content-Type": "application/octet-stream"}, 400),
])
def test_bad_request_options_are_refused(client, auth, query, headers, status):
    assert post(client, auth, "name\nX\n", query, headers).status_code == status


@pytest.mark.parametrize("query, body", [("", "name,grade\nAs Bytes Csv,GOLD\n"),
                                         ("?format=ndjson", '{"name": "As Bytes Ndjson"}\n')])
def test_a_body_of_bytes_is_read_in_the_format_the_query_names(client, auth, query, body):
    response = post(client, auth, body, query, {"Content-Type": "application/octet-stream"})
    assert response.status_code == 200, response.json
    assert response.json["created"] == 1
    name = "As Bytes Csv" if not query else "As Bytes Ndjson"
    assert name in customers_named(client, auth, name)


def test_cli_imports_a_file(database_url, tmp_path, capsys, client, auth):
    config = shipped_config()
    config["svc"].update({"data-dir": str(tmp_path), "datasource": {"url": database_url}})
    path = tmp_path / "cli.yaml"
    path.write_text(yaml.safe_dump(config))
    data = tmp_path / "customers.csv"
    data.write_text("name,grade\nFrom The Cli,GOLD\n")
    assert cli(["--config", str(path), "import", "Customer", str(data)]) == 0
    assert json.loads(capsys.readouterr().out)["created"] == 1
    assert customers_named(client, auth, "From The Cli")["From The Cli"]["grade"] == "GOLD"
    data.write_text("name,grade\nBad Cli,NOPE\n")
    assert cli(["--config", str(path), "import", "Customer", str(data)]) == 1
    assert json.loads(capsys.readouterr().err)["details"][0]["line"] == 2


def test_openapi_describes_the_import_to_callers_who_may_create(client, auth, reader_auth):
    paths = client.get("/rest/docs/openapiDetailed.json", headers=auth).json["paths"]
    operation = paths["/rest/entities/Customer/import"]["post"]
    # Bytes with ``format``: the one body generated clients can send (they drop
    # an operation with a media type they do not know); CSV and NDJSON types too.
    assert set(operation["requestBody"]["content"]) == {"application/octet-stream"}
    assert "format" in {parameter["name"] for parameter in operation["parameters"]}
    shown = client.get("/rest/docs/openapiDetailed.json", headers=reader_auth).json["paths"]
    assert "/rest/entities/Customer/import" not in shown


def _statements(app):
    """The INSERT statements run while counting (per table)."""
    from collections import Counter
    counted = Counter()
    database = app.database
    original = database.execute_sql

    def execute_sql(sql, params=None, *args, **kwargs):
        if sql.startswith("INSERT INTO"):
            counted[sql.split('"')[1]] += 1
        return original(sql, params, *args, **kwargs)
    return counted, execute_sql


def test_a_large_create_import_writes_its_rows_in_few_statements(app, client, auth, monkeypatch):
    counted, execute_sql = _statements(app)
    monkeypatch.setattr(app.database, "execute_sql", execute_sql)
    rows = "".join(f"Bulk {n},bulk{n}@import.example,SILVER\n" for n in range(1200))
    response = post(client, auth, "name,email,grade\n" + rows)
    assert response.status_code == 200, response.json
    assert response.json["created"] == 1200
    # 500 rows per batch: three batches, one INSERT each per table.
    assert counted["customer"] == 3 and counted["history_item"] == 3
    assert counted["restsvc_event"] == 3
    assert len(customers_named(client, auth, "Bulk 0", "Bulk 611", "Bulk 1199")) == 3


def test_a_row_the_database_refuses_inside_a_batch_names_its_line(client, auth):
    ids = [str(uuid.UUID(int=0x6f1c3e0a00004000800000000000 + n)) for n in range(30)]
    rows = [f"{ids[n]},Batch {n}\n" for n in range(30)]
    rows[17] = f"{ids[3]},Batch 17\n"       # the id of line 5 again: the database refuses it
    response = post(client, auth, "id,name\n" + "".join(rows))
    assert response.status_code == 400, response.json
    [refused] = response.json["details"]
    assert refused["line"] == 19
    assert customers_named(client, auth, "Batch 0", "Batch 29") == {}
    response = post(client, auth, "id,name\n" + "".join(rows), "?partial=true")
    assert response.json["created"] == 29 and response.json["failed"] == 1
    assert response.json["errors"][0]["line"] == 19
