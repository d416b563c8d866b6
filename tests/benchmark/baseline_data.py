"""The baseline's own database (``baseline.py``), filled once from restsvc's.

Same tables and columns as restsvc's (those the measured operations touch,
the change events' table and the token table), but every value stored in the
form the answer writes: ids as UUID text, enums by name, dates and date-times
as the answer's ISO text, decimals as their JSON text. The conversions
restsvc makes per row are made here once, before any measurement. The
indexes are restsvc's own, copied from its database as they are: the plain
ones, those on lower-cased text, and the trigram tables of substring search
with the triggers that keep them (a create writes them as restsvc's does).
"""
import sqlite3
import uuid
from decimal import Decimal

from baseline import unicode_lower

GRADES = {"B": "BRONZE", "S": "SILVER", "G": "GOLD"}
STATUSES = {"10": "NEW", "20": "PAID", "30": "SHIPPED", "40": "CANCELLED"}
AUDIT = ('"createdBy" TEXT, "createdDate" TEXT, "lastModifiedBy" TEXT, '
         '"lastModifiedDate" TEXT, "deletedDate" TEXT, "deletedBy" TEXT, "tenantId" TEXT')
SCHEMA = f"""
CREATE TABLE "customer" ("id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL DEFAULT 1,
  "address_street" TEXT, "address_city" TEXT, "address_postcode" TEXT, "address_country_id" TEXT,
  "name" TEXT NOT NULL, "email" TEXT, "grade" TEXT, "birthDate" TEXT, "photo" TEXT,
  "createdDate" TEXT NOT NULL, "userId" TEXT, "createdBy" TEXT, "lastModifiedBy" TEXT,
  "lastModifiedDate" TEXT, "deletedDate" TEXT, "deletedBy" TEXT, "tenantId" TEXT);
CREATE TABLE "history_item" ("id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL DEFAULT 1,
  "entityName" TEXT NOT NULL, "entityId" TEXT NOT NULL, "kind" TEXT NOT NULL,
  "username" TEXT NOT NULL, "changedDate" TEXT NOT NULL, "changes" TEXT);
CREATE TABLE "order" ("id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL DEFAULT 1,
  "number" TEXT NOT NULL, "date" TEXT NOT NULL, "customer_id" TEXT NOT NULL
  REFERENCES "customer" ("id") ON DELETE RESTRICT, "status" TEXT, "amount" TEXT, {AUDIT});
CREATE TABLE "product" ("id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL DEFAULT 1,
  "name" TEXT NOT NULL, "description" TEXT, "sku" TEXT, "price" TEXT NOT NULL, "deletedDate" TEXT,
  "deletedBy" TEXT);
CREATE TABLE "order_line" ("id" TEXT NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL DEFAULT 1,
  "order_id" TEXT NOT NULL REFERENCES "order" ("id") ON DELETE CASCADE,
  "product_id" TEXT NOT NULL REFERENCES "product" ("id") ON DELETE RESTRICT,
  "quantity" INTEGER NOT NULL, "price" TEXT, {AUDIT});
CREATE TABLE "bench_setting" ("name" TEXT NOT NULL PRIMARY KEY, "value" TEXT NOT NULL);
"""
# column -> conversion from restsvc's stored form to the answer's
IDS = ("id", "customer_id", "order_id", "product_id", "userId")
DATE_TIMES = ("createdDate", "lastModifiedDate", "deletedDate")


def _uuid(value):
    return None if value is None else str(uuid.UUID(value))


def _date_time(value):
    """Stored ``2024-01-01 09:00:00.500000`` -> ``2024-01-01T09:00:00.5`` (restsvc's form:
    to the millisecond, cut)."""
    if value is None:
        return None
    date_time, _, fraction = str(value).replace(" ", "T", 1).partition(".")
    fraction = fraction[:3].rstrip("0")
    return f"{date_time}.{fraction}" if fraction else date_time


def _money(value):
    return None if value is None else f"{Decimal(str(value)):.2f}"


CONVERT = {**dict.fromkeys(IDS, _uuid), **dict.fromkeys(DATE_TIMES, _date_time),
           "amount": _money, "price": _money}
ENUMS = {("customer", "grade"): GRADES, ("order", "status"): STATUSES}


def build(source_path, target_path, tag_shape):
    """``target_path``: a new SQLite database in the baseline's form, with the rows of
    restsvc's customer, order, order_line, product and restsvc_token tables, and
    ``tag_shape`` (``dataset.tag_shape``) for its ETags."""
    source, target = sqlite3.connect(source_path), sqlite3.connect(target_path)
    try:
        target.create_function("unicode_lower", 1, unicode_lower, deterministic=True)
        target.execute("PRAGMA journal_mode=wal")
        target.executescript(SCHEMA)
        target.execute("INSERT INTO bench_setting VALUES ('tag_shape', ?)", (tag_shape,))
        for table in ("restsvc_token", "restsvc_event"):
            table_sql, = source.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            target.execute(table_sql)
        for sql in _indexes(source, TABLES):
            target.execute(sql)
        target.executemany(f"INSERT INTO restsvc_token VALUES "
                           f"({', '.join('?' * len(_columns(source, 'restsvc_token')))})",
                           source.execute("SELECT * FROM restsvc_token"))
        for table in ("customer", "product", "order", "order_line"):
            columns = [c for c in _columns(target, table) if c in _columns(source, table)]
            conversions = [ENUMS[(table, c)].get if (table, c) in ENUMS else CONVERT.get(c)
                           for c in columns]
            names = ", ".join(f'"{c}"' for c in columns)
            rows = [[value if convert is None or value is None else convert(value)
                     for convert, value in zip(conversions, row)]
                    for row in source.execute(f'SELECT {names} FROM "{table}"')]
            target.executemany(f'INSERT INTO "{table}" ({names}) VALUES '
                               f'({", ".join("?" * len(columns))})', rows)
        target.commit()
    finally:
        source.close()
        target.close()


TABLES = ("customer", "history_item", "order", "product", "order_line", "restsvc_event")


def _indexes(source, tables):
    """restsvc's indexes of ``tables`` as its database has them: the trigram
    tables first (not their shadow tables: FTS5 makes those), then the
    indexes, then the triggers that fill the trigram tables."""
    rows = source.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    trigram = [sql for kind, name, _, sql in rows
               if kind == "table" and sql.upper().startswith("CREATE VIRTUAL TABLE")
               and any(name.startswith(f"{table}_") for table in tables)]
    indexes = [sql for kind, _, table, sql in rows if kind == "index" and table in tables]
    triggers = [sql for kind, _, table, sql in rows if kind == "trigger" and table in tables]
    return trigram + indexes + triggers


def _columns(conn, table):
    return [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]


DATE_TIME_TEXT = ("rtrim(rtrim(to_char({column}, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS'), '0'), '.')")
TEXT_FORMS = {"date": "to_char({column}, 'YYYY-MM-DD')",
              "timestamp without time zone": DATE_TIME_TEXT,
              "numeric": "round({column}, 2)::text"}
POSTGRES_TABLES = ("customer", "product", "order", "order_line", "history_item",
                   "restsvc_event", "restsvc_token")


def build_postgres(source_url, tag_shape):
    """(URL of a new schema in the baseline's form, a function that drops it): restsvc's
    tables of ``source_url``'s schema with their columns, defaults and indexes, the
    rows of customer, order, order_line, product and restsvc_token copied, and every
    value but the ids turned into the answer's text once (``baseline_pg.py``). The change
    events' ``seq`` default is restsvc's (``LIKE`` copies it): both draw from its sequence."""
    import psycopg2
    conn = psycopg2.connect(source_url)
    conn.autocommit = True
    cursor = conn.cursor()
    cursor.execute("SELECT current_schema()")
    source, = cursor.fetchone()
    target = f"{source}_baseline"

    def drop():
        cursor.execute(f'DROP SCHEMA "{target}" CASCADE')
        conn.close()
    cursor.execute(f'CREATE SCHEMA "{target}"')
    try:
        _fill(cursor, source, target, psycopg2.Binary(tag_shape.encode("utf-8")))
    except BaseException:
        drop()
        raise
    return source_url.replace(f"%3D{source}", f"%3D{target}"), drop


def _fill(cursor, source, target, tag_shape):
    for table in POSTGRES_TABLES:
        cursor.execute(f'CREATE TABLE "{target}"."{table}" (LIKE "{source}"."{table}" INCLUDING ALL)')
        if table not in ("history_item", "restsvc_event"):
            cursor.execute(f'INSERT INTO "{target}"."{table}" SELECT * FROM "{source}"."{table}"')
        cursor.execute("SELECT column_name, data_type FROM information_schema.columns "
                       "WHERE table_schema = %s AND table_name = %s", (target, table))
        for column, kind in cursor.fetchall():
            quoted = f'"{column}"'
            enum = ENUMS.get((table, column))
            if enum:
                form = ("CASE " + " ".join(f"WHEN {quoted} = '{key}' THEN '{name}'"
                                           for key, name in enum.items()) + " END")
            elif table in ("customer", "product", "order", "order_line") and kind in TEXT_FORMS:
                form = TEXT_FORMS[kind].format(column=quoted)
            else:
                continue
            cursor.execute(f'ALTER TABLE "{target}"."{table}" ALTER COLUMN {quoted} TYPE text '
                           f"USING {form}")
    # bytea: the ETag's fixed part holds NUL characters, which a PostgreSQL text cannot
    cursor.execute(f'CREATE TABLE "{target}".bench_setting (name text PRIMARY KEY, value bytea)')
    cursor.execute(f"INSERT INTO \"{target}\".bench_setting VALUES ('tag_shape', %s)",
                   (tag_shape,))
    for schema in (source, target):     # both planned from statistics, not autovacuum's timing
        cursor.execute(f'ANALYZE "{schema}".customer, "{schema}"."order", "{schema}".order_line, '
                       f'"{schema}".product')
