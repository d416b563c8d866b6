"""Reports API: list, detail, group, access, headers and the OpenAPI document."""
import json

import pytest
import yaml
from openapi_spec_validator import validate

from reports_support import (AUDIT, CUSTOMERS, ORDERS, SALES, TYPES, TYPES_REPORT, caller, period,
                             reporter, reports_dir, run)


def test_list_shows_the_rest_reports_a_caller_may_run(client, auth):
    response = client.get("/rest/reports/report", headers=auth)
    assert response.status_code == 200
    assert response.json == [
        {"id": CUSTOMERS, "name": "Customers", "code": "customers", "group": SALES},
        {"id": ORDERS, "name": "Orders by period", "code": "orders-by-period", "group": SALES}]


def test_detail_has_templates_and_input_parameters(client, auth):
    response = client.get(f"/rest/reports/report/{ORDERS}", headers=auth)
    assert response.status_code == 200
    assert response.json == {
        "id": ORDERS, "name": "Orders by period", "code": "orders-by-period", "group": SALES,
        "templates": [{"code": "XLSX", "outputType": "XLSX", "default": True},
                      {"code": "CSV", "outputType": "CSV", "default": False}],
        "inputParameters": [
            {"name": "From", "alias": "from", "type": "DATE", "required": True, "hidden": False},
            {"name": "To", "alias": "to", "type": "DATE", "required": True, "hidden": False},
            {"name": "Status", "alias": "status", "type": "ENUMERATION", "required": False,
             "hidden": False, "enumerationClass": "restsvc.demo.model.OrderStatus"}]}


def test_detail_names_entity_classes_and_defaults(make_app, tmp_path):
    c, auth = caller(make_app, reporter(),
                     overrides={"svc.reports.dir": reports_dir(tmp_path, TYPES_REPORT)})
    parameters = {p["alias"]: p for p in c.get(f"/rest/reports/report/{TYPES}", headers=auth).json["inputParameters"]}
    assert parameters["customer"] == {"name": "customer", "alias": "customer", "type": "ENTITY",
                                      "required": False, "hidden": False, "entityMetaClass": "Customer"}
    assert parameters["customers"]["type"] == "ENTITY_LIST"
    assert parameters["flag"]["defaultValue"] == "false"
    assert parameters["text"]["name"] == "Text"


def test_group(client, auth):
    response = client.get(f"/rest/reports/group/{SALES}", headers=auth)
    assert response.status_code == 200
    assert response.json == {"id": SALES, "title": "Sales", "code": "sales"}
    missing = client.get("/rest/reports/group/00000000-0000-0000-0000-000000000000", headers=auth)
    assert missing.status_code == 404
    assert missing.json == {"error": "Entity not found", "details":
                            "Entity report_ReportGroup with id 00000000-0000-0000-0000-000000000000 not found"}


@pytest.mark.parametrize("report_id", [AUDIT, "00000000-0000-0000-0000-000000000000", "not-a-uuid"])
def test_unknown_and_non_rest_reports_are_not_found(client, auth, report_id):
    for response in (client.get(f"/rest/reports/report/{report_id}", headers=auth),
                     run(client, auth, report_id)):
        assert response.status_code == 404
        assert response.json == {"error": "Entity not found",
                                 "details": f"Entity report_Report with id {report_id} not found"}


def test_a_report_the_caller_may_not_run_is_absent_and_not_found(make_app):
    c, auth = caller(make_app, reporter(reports=("customers",)))
    assert [r["id"] for r in c.get("/rest/reports/report", headers=auth).json] == [CUSTOMERS]
    denied = c.get(f"/rest/reports/report/{ORDERS}", headers=auth)
    assert denied.status_code == 404
    assert denied.json["details"] == f"Entity report_Report with id {ORDERS} not found"
    assert run(c, auth, ORDERS, period()).status_code == 404
    assert run(c, auth, CUSTOMERS).status_code == 200


def test_grants_by_id_and_groups_only_of_granted_reports(make_app):
    c, auth = caller(make_app, reporter(reports=(ORDERS,)))
    assert [r["id"] for r in c.get("/rest/reports/report", headers=auth).json] == [ORDERS]
    assert c.get(f"/rest/reports/group/{SALES}", headers=auth).status_code == 200
    c, auth = caller(make_app, reporter(reports=()))
    assert c.get("/rest/reports/report", headers=auth).json == []
    assert c.get(f"/rest/reports/group/{SALES}", headers=auth).status_code == 404


def test_the_reports_specific_policy_is_required(client, make_app):
    c, auth = caller(make_app, reporter(specifics=("rest.enabled",)))
    for response in (c.get("/rest/reports/report", headers=auth),
                     c.get(f"/rest/reports/report/{CUSTOMERS}", headers=auth),
                     run(c, auth, CUSTOMERS),
                     c.get("/rest/reports/docs/openapi.json", headers=auth)):
        assert response.status_code == 403
        assert response.json["error"] == "Forbidden"
    assert client.get("/rest/reports/report").status_code == 401


def test_reports_do_not_need_rest_enabled(make_app):
    c, auth = caller(make_app, reporter())          # reports.rest.enabled without rest.enabled
    assert c.get("/rest/entities/Customer", headers=auth).status_code == 403
    assert c.get("/rest/reports/report", headers=auth).status_code == 200
    assert run(c, auth, CUSTOMERS).status_code == 200


def test_sales_reader_runs_the_two_rest_reports(client, reader_auth):
    assert [r["code"] for r in client.get("/rest/reports/report", headers=reader_auth).json] == [
        "customers", "orders-by-period"]
    assert run(client, reader_auth, CUSTOMERS).status_code == 200
    assert run(client, reader_auth, ORDERS, period()).status_code == 200
    assert run(client, reader_auth, AUDIT).status_code == 404


def test_run_headers_csv_inline(client, auth):
    response = run(client, auth, CUSTOMERS)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/csv;charset=UTF-8"
    assert response.headers["Content-Disposition"] == (
        "inline; filename=\"customers.csv\"; filename*=UTF-8''customers.csv")
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Pragma"] == "no-cache"


def test_run_headers_xlsx_attachment_with_parameters_in_the_name(client, auth):
    response = run(client, auth, ORDERS, {**period("2024-01-01", "2024-03-31"), "attachment": True})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    assert response.headers["Content-Disposition"] == (
        "attachment; filename=\"orders 2024-01-01 to 2024-03-31.xlsx\"; "
        "filename*=UTF-8''orders%202024-01-01%20to%202024-03-31.xlsx")
    assert int(response.headers["Content-Length"]) == len(response.data)
    assert response.data[:2] == b"PK"


def test_non_ascii_file_names_come_as_filename_star(make_app, tmp_path):
    c, auth = caller(make_app, reporter(),
                     overrides={"svc.reports.dir": reports_dir(tmp_path, TYPES_REPORT)})
    response = run(c, auth, TYPES, {"parameters": [{"name": "text", "value": "Größe/€"}]})
    assert response.status_code == 200
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('inline; filename="echo Gro')
    assert disposition.endswith("filename*=UTF-8''echo%20Gr%C3%B6%C3%9Fe_%E2%82%AC.csv")


def test_templates_by_code_and_unknown_template(client, auth):
    csv_run = run(client, auth, ORDERS, period(template="CSV"))
    assert csv_run.status_code == 200 and csv_run.headers["Content-Type"].startswith("text/csv")
    xlsx_run = run(client, auth, CUSTOMERS, {"template": "XLSX"})
    assert xlsx_run.headers["Content-Type"].endswith("spreadsheetml.sheet")
    unknown = run(client, auth, CUSTOMERS, {"template": "PDF"})
    assert unknown.status_code == 400
    assert unknown.json == {"error": "Template not found",
                            "details": f"Template with code PDF not found for report {CUSTOMERS}"}


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"text"', b'{"parameters": {}}',
                                  b'{"parameters": [{"value": "x"}]}', b'{"attachment": "yes"}'])
def test_malformed_run_bodies_are_400(client, auth, body):
    response = client.post(f"/rest/reports/run/{CUSTOMERS}", headers=auth, data=body,
                           content_type="application/json")
    assert response.status_code == 400
    assert response.json["error"] == "Invalid JSON body"


def test_an_empty_body_runs_the_default_template(client, auth):
    response = client.post(f"/rest/reports/run/{CUSTOMERS}", headers=auth)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/csv")


def test_openapi_document_json_and_yaml(client, auth):
    as_json = client.get("/rest/reports/docs/openapi.json", headers=auth)
    assert as_json.status_code == 200 and as_json.mimetype == "application/json"
    document = as_json.json
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) >= {"/report", "/report/{id}", "/group/{groupId}", "/run/{id}"}
    as_yaml = client.get("/rest/reports/docs/openapi.yaml", headers=auth)
    assert as_yaml.mimetype == "application/yaml"
    assert yaml.safe_load(as_yaml.data) == document
    negotiated = client.get("/rest/reports/docs/openapi.json",
                            headers={**auth, "Accept": "application/yaml"})
    assert yaml.safe_load(negotiated.data) == json.loads(as_json.data)
