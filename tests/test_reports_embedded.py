"""Report columns through embedded values (``address.city``), and through
references to them and from them (``order.customer.address.city``,
``address.country.name``): shown like any column, under the same permissions
as answers apply; a path that cannot be shown stops startup."""
import pytest
from werkzeug.test import Client

from conftest import get_token
from reports_support import caller, csv_rows, reporter, reports_dir, run, xlsx_sheets
from test_reports_definitions import report, start
from restsvc.settings import SettingsError

ADDRESSES = "aaaaaaaa-0000-4000-8000-0000000000b1"
ADDRESS_REPORT = f"""
groups:
  - {{id: aaaaaaaa-0000-4000-8000-0000000000ab, code: places, title: Places}}
reports:
  - id: {ADDRESSES}
    code: addresses
    name: Addresses
    group: places
    restAccessible: true
    bands:
      - {{name: customers, entity: Customer, sort: name}}
      - {{name: lines, entity: OrderLine, sort: order.number}}
    templates:
      - code: CSV
        outputType: CSV
        default: true
        bands:
          - band: customers
            columns:
              - {{property: name}}
              - {{property: address.street}}
              - {{property: address.city}}
              - {{property: address.country}}
              - {{property: address.country.name, caption: Country name}}
      - code: XLSX
        outputType: XLSX
        bands:
          - band: customers
            columns:
              - {{property: name}}
              - {{property: address.city}}
          - band: lines
            columns:
              - {{property: order.number}}
              - {{property: order.customer.address.city, caption: Ship to}}
"""


def _customers(client, auth):
    plan = ('{"properties":["name",{"name":"address","fetchPlan":{"properties":["street","city",'
            '{"name":"country","fetchPlan":"_instance_name"}]}}]}')
    return client.get(f"/rest/entities/Customer?sort=name&limit=1000&fetchPlan={plan}",
                      headers=auth).json


def _address(customer, *names):
    value = customer
    for name in ("address",) + names:
        value = value.get(name) if isinstance(value, dict) else None
    return value or ""


def test_columns_through_embedded_values_are_in_the_csv(make_app, tmp_path):
    client = Client(make_app({"svc.reports.dir": reports_dir(tmp_path, ADDRESS_REPORT)}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    rows = csv_rows(run(client, auth, ADDRESSES))
    assert rows[0] == ["Name", "Street", "City", "Country", "Country name"]
    expected = [[c["name"], _address(c, "street"), _address(c, "city"),
                 _address(c, "country", "_instanceName"), _address(c, "country", "_instanceName")]
                for c in _customers(client, auth)]
    assert rows[1:] == expected
    assert any(row[2] for row in expected) and any(row[3] for row in expected)


def test_references_to_embedded_values_are_in_the_xlsx(make_app, tmp_path):
    client = Client(make_app({"svc.reports.dir": reports_dir(tmp_path, ADDRESS_REPORT)}))
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    sheets = xlsx_sheets(run(client, auth, ADDRESSES, {"template": "XLSX"}))
    assert sheets["customers"][0] == ["Name", "City"]
    assert sheets["lines"][0] == ["Number", "Ship to"]
    lines = client.get('/rest/entities/OrderLine?limit=1000&fetchPlan={"properties":[{"name":"order",'
                       '"fetchPlan":{"properties":["number",{"name":"customer","fetchPlan":'
                       '{"properties":[{"name":"address","fetchPlan":{"properties":["city"]}}]}}]}}]}',
                       headers=auth).json
    expected = sorted((line["order"]["number"], _address(line["order"]["customer"], "city") or None)
                      for line in lines)
    assert sorted(tuple(row) for row in sheets["lines"][1:]) == expected
    assert any(city for _, city in expected)


def test_embedded_columns_follow_the_owners_attribute_permissions(make_app, tmp_path):
    """``address.city`` may be viewed, ``address.street`` not; Country may
    not be read: the columns the caller may not see are left out, header
    included, as answers leave them out."""
    role = reporter(entities={"Customer": "read", "OrderLine": "read", "Order": "read"},
                    attributes={"Customer": {"name": "view", "address.city": "view",
                                             "address.country": "view"}})
    client, auth = caller(make_app, role,
                          overrides={"svc.reports.dir": reports_dir(tmp_path, ADDRESS_REPORT)})
    body = run(client, auth, ADDRESSES).get_data(as_text=True)
    rows = csv_rows(run(client, auth, ADDRESSES))
    assert rows[0] == ["Name", "City"]
    assert "weg" not in body                   # the streets of the demo's addresses
    full = {"Authorization": f"Bearer {get_token(client)}"}
    assert rows[1:] == [[c["name"], _address(c, "city")] for c in _customers(client, full)]


@pytest.mark.parametrize("column, message", [
    ("address", "address is an embedded value; a column names one of its attributes "
                "(address.street, address.city"),
    ("address.colour", "Address has no attribute colour (address.colour)"),
    ("address.city.name", "address.city.name: city has no attributes; nothing can follow it"),
    ("name.first", "name.first: name has no attributes; nothing can follow it"),
])
def test_an_embedded_path_that_cannot_be_shown_stops_startup(tmp_path, column, message):
    text = report(templates="[{code: T, outputType: CSV, default: true, "
                            f"bands: [{{band: b, columns: [{{property: {column}}}]}}]}}]")
    with pytest.raises(SettingsError) as failure:
        start(tmp_path, text)
    assert "broken.yaml: reports[0].templates[0].bands[0].columns[0].property" in str(failure.value)
    assert message in str(failure.value)
