"""Reports under the demo's tenants (restsvc/docs/tenants.md "Events,
webhooks, reports"): a report's bands read through the data layer with the
caller's access, so alice's (north) report holds north's rows only, bob's
south's, and admin's both."""
import pytest

from conftest import bearer, password_grant
from reports_support import CUSTOMERS, ORDERS, csv_rows, period, run, xlsx_sheets
from restsvc.demo.data import FIRST, LAST, tenant_of

NAMES = {tenant: sorted(f"{FIRST[i]} {LAST[i]}" for i in range(20) if tenant_of(i) == tenant)
         for tenant in ("north", "south")}


@pytest.fixture
def callers(client):
    return {user: bearer(password_grant(client, user, f"{user}-password").json["access_token"])
            for user in ("alice", "bob", "admin")}


def test_a_customers_report_holds_the_callers_tenants_customers_only(client, callers):
    for user, tenant in (("alice", "north"), ("bob", "south")):
        answer = run(client, callers[user], CUSTOMERS)
        assert answer.status_code == 200, answer.get_data(as_text=True)
        names = [row[0] for row in csv_rows(answer)[1:]]
        assert names == NAMES[tenant]
    everyone = [row[0] for row in csv_rows(run(client, callers["admin"], CUSTOMERS))[1:]]
    assert sorted(everyone) == sorted(NAMES["north"] + NAMES["south"])


def test_an_orders_report_holds_the_callers_tenants_orders_and_lines_only(client, callers):
    sheets = {user: xlsx_sheets(run(client, callers[user], ORDERS, period()))
              for user in callers}
    customers = {user: {row[2] for row in sheets[user]["Orders"][1:]} for user in sheets}
    assert customers["alice"] <= set(NAMES["north"]) and customers["alice"]
    assert customers["bob"] <= set(NAMES["south"]) and customers["bob"]
    orders = {user: {row[0] for row in sheets[user]["Orders"][1:]} for user in sheets}
    assert orders["alice"].isdisjoint(orders["bob"])
    assert orders["alice"] | orders["bob"] == orders["admin"]
    lines = {user: {row[0] for row in sheets[user]["Lines"][1:]} for user in sheets}
    assert lines["alice"] <= orders["alice"] and lines["bob"] <= orders["bob"]
