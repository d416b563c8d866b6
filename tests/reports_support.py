"""Shared by the report tests: the demo's report ids, a test report with every
parameter type (its band function echoes the parsed values back), and apps
whose callers have chosen roles."""
import csv
import dataclasses
import io
import shutil

import openpyxl

from conftest import CONFIG_DIR, get_token
from restsvc import ResourceRole

CUSTOMERS = "6d7301ac-27fe-4d66-a735-6d90a6196dbf"
ORDERS = "e543fb9b-41fc-4c99-869f-146ed717f035"
AUDIT = "8c86c96b-de99-43e2-a2d5-df73572730f3"
SALES = "00394fb5-40d6-4c16-ad9a-68fbdbf81cab"
TYPES = "aaaaaaaa-0000-4000-8000-000000000001"
TESTS_GROUP = "aaaaaaaa-0000-4000-8000-0000000000aa"

TYPES_REPORT = f"""
groups:
  - {{id: {TESTS_GROUP}, code: tests, title: Tests}}
reports:
  - id: {TYPES}
    code: types
    name: Every parameter type
    group: tests
    restAccessible: true
    parameters:
      - {{alias: text, name: Text, type: TEXT}}
      - {{alias: number, type: NUMERIC}}
      - {{alias: flag, type: BOOLEAN, default: "false"}}
      - {{alias: day, type: DATE}}
      - {{alias: moment, type: DATETIME}}
      - {{alias: time, type: TIME}}
      - {{alias: status, type: ENUMERATION, enum: restsvc.demo.model.OrderStatus}}
      - {{alias: customer, type: ENTITY, entity: Customer}}
      - {{alias: customers, type: ENTITY_LIST, entity: Customer}}
    bands:
      - {{name: echo, function: "reports_support:echo_parameters"}}
    templates:
      - code: CSV
        outputType: CSV
        default: true
        fileName: "echo {{text}}"
        bands:
          - band: echo
            columns:
              - {{property: text}}
              - {{property: number}}
              - {{property: flag}}
              - {{property: day}}
              - {{property: moment}}
              - {{property: time}}
              - {{property: status}}
              - {{property: customer._instanceName, caption: customer}}
              - {{property: customers}}
      - code: XLSX
        outputType: XLSX
        bands:
          - band: echo
            columns:
              - {{property: number}}
              - {{property: flag}}
              - {{property: day}}
              - {{property: moment}}
              - {{property: time}}
              - {{property: customer._instanceName, caption: customer}}
"""


def echo_parameters(params, data):
    """One row with the parsed parameter values (entities by instance name)."""
    row = dict(params)
    row["status"] = params["status"].name if params["status"] else None
    row["customers"] = ";".join(c["_instanceName"] for c in params["customers"] or ())
    yield row


def reports_dir(tmp_path, *extra):
    """A reports directory with the demo's file plus ``extra`` YAML texts."""
    directory = tmp_path / "reports"
    directory.mkdir(exist_ok=True)
    shutil.copy(CONFIG_DIR / "reports" / "sales.yaml", directory)
    for index, text in enumerate(extra):
        (directory / f"extra{index}.yaml").write_text(text)
    return str(directory)


def caller(make_app, *roles, row_level=(), resource_roles=None, overrides=None):
    """(Client, auth headers) of a client with exactly ``resource_roles`` (role
    codes; default: the codes of ``roles``), on an app that declares ``roles``."""
    from werkzeug.test import Client

    from restsvc.demo import application as demo
    application = dataclasses.replace(
        demo, resource_roles=tuple(demo.resource_roles) + roles,
        row_level_roles=tuple(demo.row_level_roles) + tuple(row_level))
    prefix = "svc.authserver.client.tester."
    codes = resource_roles if resource_roles is not None else [r.code for r in roles]
    app = make_app({f"{prefix}client-id": "tester", f"{prefix}client-secret": "{noop}tester-secret",
                    f"{prefix}resource-roles": ",".join(codes),
                    f"{prefix}row-level-roles": ",".join(r.code for r in row_level),
                    **(overrides or {})}, application=application)
    client = Client(app)
    return client, {"Authorization": f"Bearer {get_token(client, 'tester', 'tester-secret')}"}


def reporter(code="reporter", reports=("*",), entities=None, attributes=None,
             specifics=("reports.rest.enabled",)):
    """A role that may run reports and read the sales entities."""
    names = ("Customer", "Order", "OrderLine", "Product")
    return ResourceRole(code, entities=entities if entities is not None else {n: "read" for n in names},
                        attributes=attributes if attributes is not None else {n: {"*": "view"} for n in names},
                        specifics=specifics, reports=reports)


def run(client, auth, report_id, body=None):
    return client.post(f"/rest/reports/run/{report_id}", headers=auth, json=body)


def csv_rows(response):
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def xlsx_sheets(response):
    """{sheet title: rows of cell values}."""
    book = openpyxl.load_workbook(io.BytesIO(response.data))
    return {sheet.title: [list(row) for row in sheet.iter_rows(values_only=True)] for sheet in book}


def period(start="2024-01-01", end="2024-12-31", status=None, template=None):
    body = {"parameters": [{"name": "from", "value": start}, {"name": "to", "value": end}]}
    if status:
        body["parameters"].append({"name": "status", "value": status})
    if template:
        body["template"] = template
    return body
