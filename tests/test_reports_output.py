"""Report documents read back and compared cell by cell with the same data
loaded through /rest/entities; the formula guard; what a caller may not see."""
import datetime
import io
import shutil
import subprocess
import zipfile
from decimal import Decimal

import openpyxl
import pytest

from reports_support import (AUDIT, CUSTOMERS, ORDERS, caller, csv_rows, period, reporter, reports_dir,
                             run, xlsx_sheets)
from restsvc import RowLevelRole
from restsvc.data.access import Access
from restsvc.security.roles import SYSTEM_FULL_ACCESS, Permissions
from restsvc.reports import runner

GRADES = {"BRONZE": "Bronze", "SILVER": "Silver", "GOLD": "Gold"}
STATUSES = {"NEW": "New", "PAID": "Paid", "SHIPPED": "Shipped", "CANCELLED": "Cancelled"}


def entities(client, auth, path):
    response = client.get(f"/rest/entities/{path}", headers=auth)
    assert response.status_code == 200
    return response.json


def customers(client, auth):
    rows = entities(client, auth, "Customer?sort=name&limit=1000&fetchPlan=_local")
    return sorted(rows, key=lambda r: (r["name"], r["id"]))


def test_a_csv_cell_of_a_date_time_is_its_text_form_to_the_millisecond(client, auth):
    from restsvc.demo.model import Customer
    Customer.update(createdDate=datetime.datetime(2024, 1, 2, 3, 4, 5, 907980)).execute()
    rows = csv_rows(run(client, auth, CUSTOMERS))
    assert {row[4] for row in rows[1:]} == {"2024-01-02T03:04:05.907"}


def test_customers_csv_matches_the_entities(client, auth):
    rows = csv_rows(run(client, auth, CUSTOMERS))
    assert rows[0] == ["Name", "Email", "Grade", "Birth date", "Created"]
    assert rows[1:] == [[c["name"], c["email"], GRADES[c["grade"]], c["birthDate"], c["createdDate"]]
                        for c in customers(client, auth)]


def test_customers_xlsx_matches_the_entities_with_typed_cells(client, auth):
    response = run(client, auth, CUSTOMERS, {"template": "XLSX"})
    sheet = openpyxl.load_workbook(io.BytesIO(response.data))["Customers"]
    got = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert got[0] == ["Name", "Email", "Grade", "Birth date", "Created"]
    assert got[1:] == [[c["name"], c["email"], GRADES[c["grade"]],
                        datetime.datetime.fromisoformat(c["birthDate"]),
                        datetime.datetime.fromisoformat(c["createdDate"])]
                       for c in customers(client, auth)]
    assert sheet["D2"].number_format == "yyyy-mm-dd" and sheet["E2"].number_format == "yyyy-mm-dd hh:mm:ss"
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref == f"A1:E{len(got)}"
    assert all(cell.font.b for cell in sheet[1])


def test_orders_xlsx_has_orders_and_lines_sheets_matching_the_entities(client, auth):
    response = run(client, auth, ORDERS, period("2024-01-01", "2024-03-31"))
    book = openpyxl.load_workbook(io.BytesIO(response.data))
    assert book.sheetnames == ["Orders", "Lines"]
    orders = entities(client, auth, "Order/search?fetchPlan=order-with-details&sort=date,number"
                      "&filter=" + '{"conditions":[{"property":"date","operator":"<=","value":"2024-03-31"}]}')
    got = [[cell.value for cell in row] for row in book["Orders"].iter_rows()]
    assert got[0] == ["Number", "Date", "Customer", "Customer email", "Status", "Amount"]
    assert got[1:] == [[o["number"], datetime.datetime.fromisoformat(o["date"]), o["customer"]["name"],
                        o["customer"]["email"], STATUSES[o["status"]], float(o["amount"])] for o in orders]
    assert book["Orders"]["F2"].number_format == "#,##0.00"
    lines = [[o["number"], line["product"]["name"], line["quantity"], float(line["price"])]
             for o in orders for line in sorted(o["lines"], key=lambda line: line["id"])]
    got_lines = [[cell.value for cell in row] for row in book["Lines"].iter_rows(min_row=2)]
    assert sorted(got_lines) == sorted(lines)
    assert [row[0] for row in got_lines] == sorted(row[0] for row in got_lines)
    assert book["Lines"]["D2"].number_format == "0.00"


def test_decimals_keep_their_scale_in_csv(client, auth):
    rows = csv_rows(run(client, auth, ORDERS, period(template="CSV")))
    amounts = [row[5] for row in rows[1:]]
    assert amounts and all(Decimal(a).as_tuple().exponent == -2 for a in amounts)


def test_captions_follow_the_request_language(client, auth):
    response = client.post(f"/rest/reports/run/{CUSTOMERS}", headers={**auth, "Accept-Language": "de"})
    rows = csv_rows(response)
    assert rows[0] == ["Name", "E-Mail", "Kundenstufe", "Geburtsdatum", "Angelegt am"]
    assert {row[2] for row in rows[1:]} == {"Bronze", "Silber", "Gold"}


HOSTILE = ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-3+4", "@SUM(A1)", "\tTabbed", "\rReturn"]


def test_values_a_spreadsheet_would_run_are_text_in_both_formats(client, auth):
    for name in HOSTILE + ["Bad\x01Name\x1f"]:
        created = client.post("/rest/entities/Customer", headers=auth, json={"name": name})
        assert created.status_code == 201, created.json
    csv_names = [row[0] for row in csv_rows(run(client, auth, CUSTOMERS))[1:]]
    for name in HOSTILE:
        assert "'" + name in csv_names
    assert "BadName" in csv_names
    sheet = openpyxl.load_workbook(io.BytesIO(run(client, auth, CUSTOMERS, {"template": "XLSX"}).data))["Customers"]
    cells = {cell.value: cell for cell in sheet["A"]}
    for name in HOSTILE:
        assert cells[name].data_type == "s"
        assert cells[name].quotePrefix
    assert "BadName" in cells and not cells["BadName"].quotePrefix


def test_hidden_attributes_never_appear(client, reader_auth):
    body = run(client, reader_auth, CUSTOMERS).get_data(as_text=True)
    assert body.splitlines()[0] == "Name,Grade,Birth date,Created"
    assert "@example.com" not in body
    document = run(client, reader_auth, ORDERS, period()).data
    with zipfile.ZipFile(io.BytesIO(document)) as archive:
        xml = b"".join(archive.read(name) for name in archive.namelist())
    assert b"@example.com" not in xml and b"Customer email" not in xml and b"Email" not in xml
    sheets = xlsx_sheets(run(client, reader_auth, ORDERS, period()))
    assert sheets["Orders"][0] == ["Number", "Date", "Customer", "Status", "Amount"]


def test_rows_hidden_by_row_level_roles_never_appear(make_app):
    alices = RowLevelRole("alices-orders", filters={"Order": {"conditions": [
        {"property": "customer.name", "operator": "startsWith", "value": "Alice"}]}})
    c, auth = caller(make_app, reporter(), row_level=(alices,))
    sheets = xlsx_sheets(run(c, auth, ORDERS, period("2024-01-01", "2025-12-31")))
    assert [row[0] for row in sheets["Orders"][1:]] == ["00001", "00021", "00041"]
    assert {row[2] for row in sheets["Orders"][1:]} == {"Alice Adler"}
    assert sheets["Lines"][1:] and {row[0] for row in sheets["Lines"][1:]} == {"00001", "00021", "00041"}


def test_a_reference_hidden_by_row_level_roles_is_an_empty_cell(make_app):
    only_a = RowLevelRole("only-a", filters={"Customer": {"conditions": [
        {"property": "name", "operator": "startsWith", "value": "A"}]}})
    c, auth = caller(make_app, reporter(), row_level=(only_a,))
    rows = csv_rows(run(c, auth, ORDERS, period(template="CSV")))
    assert len(rows) > 10
    assert {row[2] for row in rows[1:]} == {"Alice Adler", ""}
    assert {row[3] for row in rows[1:]} == {"alice.adler@example.com", ""}


def test_a_band_on_an_entity_the_caller_may_not_read_is_403(make_app):
    c, auth = caller(make_app, reporter(entities={"Customer": "read"},
                                        attributes={"Customer": {"*": "view"}}))
    assert run(c, auth, CUSTOMERS).status_code == 200
    response = run(c, auth, ORDERS, period())
    assert response.status_code == 403
    assert response.json == {"error": "Reading forbidden", "details": "Reading of the Order is forbidden"}


def test_a_band_above_the_row_limit_is_refused_before_any_output(make_app):
    c, auth = caller(make_app, reporter(), overrides={"svc.reports.max-rows": 10})
    response = run(c, auth, CUSTOMERS)
    assert response.status_code == 400
    assert response.json["error"] == "Run report error"
    assert "svc.reports.max-rows" in response.json["details"]


UNSORTED = """
groups: [{id: aaaaaaaa-0000-4000-8000-0000000000bb, title: Batches}]
reports:
  - id: aaaaaaaa-0000-4000-8000-000000000002
    name: Unsorted
    group: aaaaaaaa-0000-4000-8000-0000000000bb
    restAccessible: true
    bands: [{name: all, entity: Customer}]
    templates:
      - {code: CSV, outputType: CSV, default: true,
         bands: [{band: all, columns: [{property: id}, {property: name}]}]}
"""


@pytest.mark.parametrize("report, template", [(CUSTOMERS, "CSV"), (CUSTOMERS, "XLSX"),
                                              ("aaaaaaaa-0000-4000-8000-000000000002", "CSV")])
def test_rows_come_in_batches_without_gaps_or_repeats(make_app, tmp_path, monkeypatch, report, template):
    c, auth = caller(make_app, reporter(), overrides={"svc.reports.dir": reports_dir(tmp_path, UNSORTED)})
    whole = run(c, auth, report, {"template": template}).data
    monkeypatch.setattr(runner, "BATCH_ROWS", 3)
    batched = run(c, auth, report, {"template": template})
    if template == "CSV":
        assert batched.data == whole
        rows = csv_rows(batched)[1:]
        assert len(rows) == 20 and len({row[0] for row in rows}) == 20
    else:
        assert xlsx_sheets(batched) == xlsx_sheets(c.post(f"/rest/reports/run/{report}",
                                                          headers=auth, json={"template": template}))


def test_the_internal_audit_report_counts_what_the_caller_may_see(app):
    """Not available through REST; run through the domain the way another
    front end would, with a caller limited to Alice's orders."""
    alices = RowLevelRole("alices", filters={"Order": {"conditions": [
        {"property": "customer.name", "operator": "=", "value": "Alice Adler"}]}})
    report = app.reports.by_id[AUDIT]
    for row_level, expected in (((), [13, 13, 12, 12]), ((alices,), [3, 0, 0, 0])):
        permissions = Permissions(app.metadata, [SYSTEM_FULL_ACCESS], row_level)
        access = Access(app.metadata, permissions, {"username": "x", "userId": ""}, app.database,
                        app.data.sql_cache)
        document = app.reports.run(report, {}, access, app.data, app.messages.captions("en"))
        with document.file:
            rows = [list(r) for r in openpyxl.load_workbook(document.file)["statuses"].iter_rows(values_only=True)]
        assert rows == [["Status", "Orders"]] + [[s, n] for s, n in zip(STATUSES, expected)]


def _office():
    return shutil.which("libreoffice") or shutil.which("soffice")


def test_libreoffice_opens_the_xlsx(client, auth, tmp_path):
    office = _office()
    if office is None:
        pytest.skip("LibreOffice is not installed (libreoffice or soffice on PATH; "
                    "apt-get install libreoffice-calc-nogui)")
    source = tmp_path / "orders.xlsx"
    source.write_bytes(run(client, auth, ORDERS, period()).data)
    result = subprocess.run(
        [office, "--headless", f"-env:UserInstallation=file://{tmp_path}/profile",
         "--convert-to", "pdf", "--outdir", str(tmp_path), str(source)],
        capture_output=True, timeout=180)
    pdf = tmp_path / "orders.pdf"
    assert pdf.exists(), result.stdout + result.stderr
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000
