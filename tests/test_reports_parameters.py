"""Report parameters: every type parsed from its text form, and each error."""
import datetime

import pytest

from conftest import demo_id
from reports_support import (ORDERS, TYPES, TYPES_REPORT, caller, csv_rows, period, reporter,
                             reports_dir, run, xlsx_sheets)
from restsvc import RowLevelRole


@pytest.fixture
def types_caller(make_app, tmp_path):
    return caller(make_app, reporter(),
                  overrides={"svc.reports.dir": reports_dir(tmp_path, TYPES_REPORT)})


def echo(types_caller, **values):
    c, auth = types_caller
    parameters = [{"name": name, "values": value} if isinstance(value, list) else
                  {"name": name, "value": value} for name, value in values.items()]
    return run(c, auth, TYPES, {"parameters": parameters})


def test_every_parameter_type_is_parsed(types_caller):
    response = echo(types_caller, text="=x, y", number="12.50", flag="true", day="2024-02-29",
                    moment="2024-02-29T13:45:10.250", time="08:30:00", status="PAID",
                    customer=demo_id("customer", 1),
                    customers=[demo_id("customer", 2), demo_id("customer", 3)],
                    undeclared="ignored")
    assert response.status_code == 200, response.json
    header, row = csv_rows(response)
    assert header == ["text", "number", "flag", "day", "moment", "time", "status", "customer",
                      "customers"]
    assert row == ["'=x, y", "12.50", "true", "2024-02-29", "2024-02-29T13:45:10.25", "08:30:00",
                   "PAID", "Bruno Berg", "Chiara Conti;Dmitri Dietz"]


def test_function_band_cells_are_typed_by_their_python_type(types_caller):
    c, auth = types_caller
    response = run(c, auth, TYPES, {"template": "XLSX", "parameters": [
        {"name": "number", "value": "12.5"}, {"name": "flag", "value": "true"},
        {"name": "day", "value": "2024-02-29"}, {"name": "moment", "value": "2024-02-29T13:45:10"},
        {"name": "time", "value": "08:30:00"}, {"name": "customer", "value": demo_id("customer", 1)}]})
    assert response.status_code == 200
    assert xlsx_sheets(response)["echo"] == [
        ["number", "flag", "day", "moment", "time", "customer"],
        [12.5, True, datetime.datetime(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 45, 10),
         datetime.time(8, 30), "Bruno Berg"]]


def test_absent_optional_parameters_are_empty_and_defaults_apply(types_caller):
    response = echo(types_caller)
    assert response.status_code == 200
    assert csv_rows(response)[1] == ["", "", "false", "", "", "", "", "", ""]


@pytest.mark.parametrize("name, value, expected", [
    ("number", "twelve", "a number such as 12.5"),
    ("number", "NaN", "a number such as 12.5"),
    ("flag", "yes", "true or false"),
    ("day", "31.01.2024", "yyyy-MM-dd"),
    ("day", "2024-02-30", "yyyy-MM-dd"),
    ("moment", "yesterday", "yyyy-MM-ddTHH:mm:ss[.SSS]"),
    ("time", "25:00", "HH:mm:ss"),
    ("status", "paid", "a constant name of the enum"),
    ("text", ["a", "b"], "one value expected"),
])
def test_malformed_values_are_400_naming_the_parameter(types_caller, name, value, expected):
    response = echo(types_caller, **{name: value})
    assert response.status_code == 400
    assert response.json["error"] == "Run report error"
    assert name in response.json["details"] and expected in response.json["details"]


def test_missing_required_parameter_is_400(client, auth):
    response = run(client, auth, ORDERS, {"parameters": [{"name": "from", "value": "2024-01-01"}]})
    assert response.status_code == 400
    assert response.json == {"error": "Run report error",
                             "details": "Required report parameter to not found"}
    assert run(client, auth, ORDERS).status_code == 400


@pytest.mark.parametrize("name", ["customer", "customers"])
def test_entity_ids_must_be_ids(types_caller, name):
    response = echo(types_caller, **{name: "not-an-id" if name == "customer" else ["not-an-id"]})
    assert response.status_code == 400
    assert response.json == {"error": "Invalid entity ID",
                             "details": "Cannot convert not-an-id into valid entity ID"}


@pytest.mark.parametrize("name", ["customer", "customers"])
def test_entity_that_does_not_exist_is_404(types_caller, name):
    missing = "00000000-0000-0000-0000-000000000001"
    response = echo(types_caller, **{name: missing if name == "customer" else [missing]})
    assert response.status_code == 404
    assert response.json == {"error": "Entity not found",
                             "details": f"Entity Customer with id {missing} not found"}


def test_entity_hidden_by_row_level_roles_is_404(make_app, tmp_path):
    only_a = RowLevelRole("only-a", filters={"Customer": {"conditions": [
        {"property": "name", "operator": "startsWith", "value": "A"}]}})
    c, auth = caller(make_app, reporter(), row_level=(only_a,),
                     overrides={"svc.reports.dir": reports_dir(tmp_path, TYPES_REPORT)})
    visible = run(c, auth, TYPES, {"parameters": [{"name": "customer", "value": demo_id("customer", 0)}]})
    assert visible.status_code == 200 and csv_rows(visible)[1][7] == "Alice Adler"
    hidden = run(c, auth, TYPES, {"parameters": [{"name": "customer", "value": demo_id("customer", 1)}]})
    assert hidden.status_code == 404


def test_entity_the_caller_may_not_read_is_403(make_app, tmp_path):
    c, auth = caller(make_app, reporter(entities={"Order": "read"}, attributes={}),
                     overrides={"svc.reports.dir": reports_dir(tmp_path, TYPES_REPORT)})
    response = run(c, auth, TYPES, {"parameters": [{"name": "customer", "value": demo_id("customer", 1)}]})
    assert response.status_code == 403
    assert response.json == {"error": "Reading forbidden", "details": "Reading of the Customer is forbidden"}


def test_too_many_entity_list_values(types_caller):
    response = echo(types_caller, customers=[demo_id("customer", 1)] * 1001)
    assert response.status_code == 400 and "customers" in response.json["details"]


def test_parameters_filter_the_rows(client, auth):
    january = csv_rows(run(client, auth, ORDERS, period("2024-01-01", "2024-01-31", template="CSV")))
    assert [row[1] for row in january[1:]] == ["2024-01-01", "2024-01-04", "2024-01-07", "2024-01-10",
                                               "2024-01-13", "2024-01-16", "2024-01-19", "2024-01-22",
                                               "2024-01-25", "2024-01-28", "2024-01-31"]
    paid = csv_rows(run(client, auth, ORDERS, period(status="PAID", template="CSV")))
    assert len(paid) > 2 and {row[4] for row in paid[1:]} == {"Paid"}
