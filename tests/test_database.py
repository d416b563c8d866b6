"""The database as set up by restsvc: durable commits by default, declared indexes."""
import datetime
import json
import re
import uuid

import pytest

from restsvc.app import RestApp
from restsvc.db import is_sqlite

from conftest import make_settings


def sqlite_app(tmp_path, overrides=None):
    settings = make_settings(f"sqlite:///{tmp_path / 'durable.db'}", tmp_path,
                             {"svc.demo-data": False, **(overrides or {})})
    return RestApp(settings)


def synchronous_level(app):
    try:
        return app.database.execute_sql("PRAGMA synchronous").fetchone()[0]
    finally:
        app.database.close()


def test_sqlite_commits_are_durable_by_default(tmp_path):
    assert synchronous_level(sqlite_app(tmp_path)) == 2       # FULL: the WAL is synced per commit


def test_sqlite_synchronous_setting_trades_durability_for_speed(tmp_path):
    app = sqlite_app(tmp_path, {"svc.datasource.sqlite-synchronous": "normal"})
    assert synchronous_level(app) == 1                        # NORMAL: synced at checkpoints


def test_sqlite_synchronous_setting_rejects_other_words(tmp_path):
    from restsvc.settings import SettingsError
    with pytest.raises(SettingsError, match="svc.datasource.sqlite-synchronous"):
        sqlite_app(tmp_path, {"svc.datasource.sqlite-synchronous": "off"})


def test_schema_creates_the_declared_indexes(app):
    indexes = {table: {index.name: index.columns for index in app.database.get_indexes(table)}
               for table in ("customer", "order", "order_line")}
    # Customer and Order are tenant-scoped: the tenant leads each declared index.
    assert indexes["customer"]["customer_tenantId_name"] == ["tenantId", "name"]   # index=True
    assert indexes["customer"]["customer_tenantId_email"] == ["tenantId", "email"]
    assert indexes["customer"]["customer_tenantId_createdDate"] == ["tenantId", "createdDate"]
    assert indexes["order"]["order_tenantId_status_date"] == [
        "tenantId", "status", "date"]                                   # Meta.indexes
    assert indexes["order"]["order_customer_id"] == ["customer_id"]    # foreign keys
    assert indexes["order_line"]["order_line_order_id"] == ["order_id"]
    # the lower-cased values of indexed text, for the case-insensitive operators
    assert "customer_name_lower" in indexes["customer"]
    assert "customer_email_lower" in indexes["customer"]
    assert not any(name.startswith("customer_grade") for name in indexes["customer"])


def statements_of(app, client, path, auth):
    """The SQL statements one request runs."""
    seen, execute = [], app.database.execute_sql

    def recording(sql, params=None, *args, **kwargs):
        seen.append((sql, params))
        return execute(sql, params, *args, **kwargs)
    app.database.execute_sql = recording
    try:
        response = client.get(path, headers=auth)
    finally:
        del app.database.execute_sql
    assert response.status_code == 200, response.text
    return response, [(sql, params) for sql, params in seen if 'FROM "customer"' in sql]


def plan_of(app, sql, params):
    """The query plan as text. PostgreSQL is told to avoid sequential scans, so a
    tiny test table shows whether the index can serve the query at all."""
    database = app.database
    if is_sqlite(database):
        rows = database.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
        return " | ".join(row[-1] for row in rows)
    with database.atomic():
        database.execute_sql("SET LOCAL enable_seqscan = off")
        rows = database.execute_sql(f"EXPLAIN {sql}", params).fetchall()
    return " | ".join(row[0] for row in rows)


@pytest.mark.parametrize("condition, index, caller", [
    # alice (tenant north): her tenant's rows, read from an index the tenant leads
    # ((tenantId, name) on SQLite; PostgreSQL's planner may take another of them
    # for a table this small)
    ({"property": "name", "operator": "=", "value": "Alice Adler"}, r"\"?customer_tenantId_\w+",
     "alice_auth"),
    ({"property": "name", "operator": "startsWith", "value": "ALI"}, "customer_name_lower",
     "auth"),
    ({"property": "email", "operator": "startsWith", "value": "Ältere"}, "customer_email_lower",
     "auth"),
])
def test_search_on_an_indexed_attribute_uses_its_index(app, client, request, condition, index,
                                                       caller):
    query = json.dumps({"conditions": [condition]})
    response, statements = statements_of(app, client,
                                         f"/rest/entities/Customer/search?filter={query}",
                                         request.getfixturevalue(caller))
    if condition["value"] == "ALI":
        assert [c["name"] for c in response.json] == ["Alice Adler"]
    (sql, params), = statements
    plan = plan_of(app, sql, params)
    assert re.search(rf"(INDEX|Index Scan using|Index Scan on) {index}\b", plan), plan


def test_postgresql_ids_arrive_as_the_text_rows_hold(app):
    """restsvc's PostgreSQL connections read a uuid column as its canonical
    text, the form loaded rows and answers hold (no ``uuid.UUID`` made per
    value and written back, db.py); Peewee's models still see ``uuid.UUID``
    and take it as a parameter. SQLite stores the 32 hex digits."""
    from restsvc.demo.model import Order
    order = Order.select().order_by(Order.id).first()
    assert isinstance(order.id, uuid.UUID) and isinstance(order.customer_id, uuid.UUID)
    sql, params = Order.select(Order.id, Order.customer).where(Order.id == order.id).sql()
    try:
        stored = tuple(app.database.execute_sql(sql, params).fetchone())
    finally:
        app.database.close()
    if is_sqlite(app.database):
        assert stored == (order.id.hex, order.customer_id.hex)
    else:
        assert stored == (str(order.id), str(order.customer_id))


def test_the_read_path_reads_dates_as_their_text_and_other_statements_as_datetimes(app):
    """The read path's statements (``db.read_rows``) get date and timestamp
    columns as their ISO text on PostgreSQL as on SQLite (there the fraction
    without its trailing zeros), which the answer writes by slicing; on
    PostgreSQL every other statement, and Peewee's models, still get
    ``datetime`` objects on the same connection."""
    from restsvc.db import execute, read_rows
    from restsvc.demo.model import Customer
    moment, born = datetime.datetime(2024, 1, 1, 9, 0, 0, 500000), datetime.date(1990, 5, 1)
    customer = Customer.select().order_by(Customer.id).first()
    Customer.update(createdDate=moment, birthDate=born).where(
        Customer.id == customer.id).execute()
    sql, params = Customer.select(Customer.createdDate, Customer.birthDate).where(
        Customer.id == customer.id).sql()
    try:
        read = tuple(read_rows(app.database, sql, params).fetchone())
        other = tuple(execute(app.database, sql, params).fetchone())
        again = tuple(read_rows(app.database, sql, params).fetchone())
    finally:
        app.database.close()
    assert Customer.get_by_id(customer.id).createdDate == moment
    if is_sqlite(app.database):
        assert read == other == again == ("2024-01-01 09:00:00.500000", "1990-05-01")
    else:
        assert read == again == ("2024-01-01 09:00:00.5", "1990-05-01")
        assert other == (moment, born)
