"""Queries API under entity, attribute and row-level policies."""
from restsvc import ResourceRole, RowLevelRole

NO_ORDERS = ResourceRole("t-customers", entities={"Customer": "read"}, attributes={"Customer": {"*": "view"}})
READER = ResourceRole(
    "t-reader", entities={"Customer": "read", "Order": "read", "OrderLine": "read", "Product": "read"},
    attributes={"Customer": {"name": "view", "grade": "view"}, "Order": {"*": "view"},
                "OrderLine": {"*": "view"}, "Product": {"*": "view"}})
FULL = ResourceRole("t-full", entities={"*": "*"}, attributes={"*": {"*": "modify"}})
GOLD_ONLY = RowLevelRole("t-gold", filters={
    "Customer": {"conditions": [{"property": "grade", "operator": "=", "value": "GOLD"}]},
    "Order": {"conditions": [{"property": "customer.grade", "operator": "=", "value": "GOLD"}]}})


def test_reading_forbidden_everywhere_without_read_permission(client_with_roles):
    c, auth = client_with_roles(NO_ORDERS)
    for path in ("/rest/queries/Order", "/rest/queries/Order/ordersByStatus?status=NEW",
                 "/rest/queries/Order/ordersByStatus/count?status=NEW", "/rest/queries/Order/all",
                 "/rest/queries/Order/nope"):
        response = c.get(path, headers=auth)
        assert response.status_code == 403, path
        assert response.json == {"error": "Reading forbidden", "details": "Reading of the Order is forbidden"}
    assert c.post("/rest/queries/Order/ordersByStatus", json={"status": "NEW"}, headers=auth).status_code == 403
    assert c.get("/rest/queries/Customer/customersByGrades?grades=GOLD", headers=auth).status_code == 200


def test_hidden_attributes_are_absent_from_results(client_with_roles):
    c, auth = client_with_roles(READER)
    customers = c.get("/rest/queries/Customer/customersByGrades?grades=GOLD&returnNulls=true", headers=auth).json
    assert customers and all("email" not in row and "birthDate" not in row for row in customers)
    orders = c.get("/rest/queries/Order/ordersByStatus?status=NEW", headers=auth).json
    assert orders[0]["customer"]["name"] and "email" not in orders[0]["customer"]


def test_row_level_roles_apply_to_results_and_counts(client_with_roles):
    c, auth = client_with_roles(FULL, row_level=(GOLD_ONLY,))
    everyone = {"grades": ["BRONZE", "SILVER", "GOLD"]}
    rows = c.post("/rest/queries/Customer/customersByGrades?returnCount=true", json=everyone, headers=auth)
    assert {row["grade"] for row in rows.json} == {"GOLD"} and rows.headers["X-Total-Count"] == "6"
    assert c.post("/rest/queries/Customer/customersByGrades/count", json=everyone, headers=auth).json == 6
    assert c.get("/rest/queries/Customer/all/count", headers=auth).json == 6
    paid = c.get("/rest/queries/Order/ordersByStatus?status=PAID", headers=auth).json
    assert paid and all(row["customer"]["grade"] == "GOLD" for row in paid)
