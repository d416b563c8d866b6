"""Large reports, for the gunicorn memory test and tests/benchmark/reports.py:
a report of 8 columns over the orders (strings, numbers, dates, enums and a
reference's instance name) and a quick way to fill a database with orders."""
import datetime
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal

from servers import memory_kib, reset_peak

BIG = "bbbbbbbb-0000-4000-8000-000000000001"
BIG_REPORT = f"""
groups: [{{id: bbbbbbbb-0000-4000-8000-0000000000aa, code: load, title: Load}}]
reports:
  - id: {BIG}
    code: all-orders
    name: All orders
    group: load
    restAccessible: true
    bands: [{{name: orders, entity: Order}}]
    templates:
      - code: CSV
        outputType: CSV
        default: true
        fileName: all-orders
        bands: &columns
          - band: orders
            columns:
              - property: number
              - property: date
              - property: customer
              - property: customer.email
              - property: status
              - property: amount
              - property: customer.grade
              - property: customer.birthDate
      - {{code: XLSX, outputType: XLSX, fileName: all-orders, bands: *columns}}
"""


def _insert(database, model, rows):
    """executemany of rows (dicts of Python values): much faster than building
    one large INSERT, which converts every value through Peewee's query nodes."""
    from restsvc.db import is_sqlite
    fields = [model._meta.fields[name] for name in rows[0]]
    values = [[f.db_value(v) for f, v in zip(fields, row.values())] for row in rows]
    columns = ", ".join(f'"{field.column_name}"' for field in fields)
    sql = f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES '
    cursor = database.cursor()
    if is_sqlite(database):
        cursor.executemany(sql + f'({", ".join("?" * len(fields))})', values)
    else:   # psycopg2's executemany is a round trip per row
        from psycopg2.extras import execute_values
        execute_values(cursor, sql + "%s", values, page_size=2000)


def fill_orders(database_url, count, customers=1000):
    """Add ``count`` orders over ``customers`` new customers, in one transaction."""
    from restsvc import db
    from restsvc.demo.model import Customer, CustomerGrade, Order, OrderStatus
    database = db.open_database(database_url, 2)
    grades, statuses = list(CustomerGrade), list(OrderStatus)
    customer_ids = [uuid.uuid4() for _ in range(customers)]
    start = datetime.date(2020, 1, 1)
    with database.atomic():
        _insert(database, Customer, [dict(
            id=cid, version=1, tenantId="north", name=f"Load customer {i}",
            email=f"load{i}@example.com",
            grade=grades[i % 3], birthDate=start - datetime.timedelta(days=9000 + i),
            createdDate=datetime.datetime(2024, 1, 1)) for i, cid in enumerate(customer_ids)])
        for first in range(0, count, 10000):
            _insert(database, Order, [dict(
                id=uuid.uuid4(), version=1, tenantId="north", number=f"L{i:07d}",
                date=start + datetime.timedelta(days=i % 1500), customer=customer_ids[i % customers],
                status=statuses[i % 4], amount=Decimal(i % 100000) / 100)
                for i in range(first, min(first + 10000, count))])
    database.close()


@dataclass
class Transfer:
    label: str
    status: int
    size: int
    seconds: float
    growth_kib: int      # the worker's peak RSS during the request minus its RSS before


def download(server, report_id, template, label=None):
    """Run a report on a real server, reading the body in chunks."""
    pid = server.worker_pids()[0]
    reset_peak(pid)
    baseline = memory_kib(pid, "VmRSS")
    started = time.monotonic()
    conn = server.connection()
    try:
        conn.request("POST", f"/rest/reports/run/{report_id}", body=f'{{"template": "{template}"}}',
                     headers={**server.auth(), "Content-Type": "application/json"})
        response = conn.getresponse()
        size = 0
        while chunk := response.read(1 << 16):
            size += len(chunk)
    finally:
        conn.close()
    seconds = time.monotonic() - started
    return Transfer(label or template, response.status, size, seconds,
                    memory_kib(pid, "VmHWM") - baseline)
