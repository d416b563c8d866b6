"""Deterministic demo data: 8 countries, 7 tags, 20 customers, 10 products,
50 orders with lines, two tenants and six users.

Customers and orders alternate between the tenants ``north`` (even numbers)
and ``south`` (odd numbers); an order is its customer's tenant's, as are its
lines. Countries, tags and products are shared.

Ids are UUIDv5 of fixed names, so every installation has the same rows and
tests can name them; countries are named by their ISO codes, tags get the ids
the database assigns (in this order on a new database).
"""
import datetime
import decimal
import functools
import uuid
from collections.abc import Sequence
from typing import Any

import peewee

from restsvc import Entity, Tenant, User, hash_secret

from .model import (Country, Customer, CustomerGrade, Order, OrderLine, OrderStatus, Product,
                    Tag)

NAMESPACE = uuid.UUID("5b8e1d8e-2f7a-4c39-9a5e-3f1c2b7d9e10")

FIRST = ["Alice", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kaori", "Lars", "Mona", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tara"]
LAST = ["Adler", "Berg", "Conti", "Dietz", "Eklund", "Falk", "Gruber", "Haas", "Ito", "Jung",
        "Kraus", "Lind", "Moser", "Novak", "Ortiz", "Pohl", "Quast", "Roth", "Sauer", "Thiel"]
PRODUCTS = [("Solar panel", "SP-100", "249.00",
             "Monocrystalline panel for roofs; pairs with the inverter and mounting rail"),
            ("Inverter", "INV-3K", "899.50",
             "Turns the direct current of solar panels into mains power"),
            ("Battery pack", "BAT-10", "1299.00",
             "Stores solar power for the evening; needs a charge controller"),
            ("Mounting rail", "MR-2M", "34.90", "Aluminium rail holding two panels on a roof"),
            ("Cable set", "CB-6MM", "19.95", "Solar cables with connectors, six square millimetres"),
            ("Charge controller", "CC-40A", "129.00",
             "Charges a battery from solar panels without overcharging it"),
            ("Energy meter", "EM-1", "79.00", "Measures the power a home draws and feeds in"),
            ("Wall box", "WB-11", "649.00", "Charges an electric car from solar or mains power"),
            ("Heat pump", "HP-8", "7450.00", "Heats a home with outdoor air"),
            ("Smart plug", "PLG-1", "24.99", "Switches a device when the panels make power")]
COUNTRIES = [("DE", "Germany"), ("AT", "Austria"), ("CH", "Switzerland"), ("FR", "France"),
             ("IT", "Italy"), ("NL", "Netherlands"), ("SE", "Sweden"), ("ES", "Spain")]
# (name, internal): internal tags are hidden from sales-reader.
TAGS = [("eco", False), ("bestseller", False), ("new", False), ("outdoor", False),
        ("smart", False), ("clearance", True), ("high-margin", True)]


def _id(kind: str, number: object) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{kind}-{number}")


CITIES = [("Berlin", "10115", "DE"), ("Hamburg", "20095", "DE"), ("Vienna", "1010", "AT"),
          ("Zurich", "8001", "CH"), ("Lyon", "69001", "FR"), ("Milan", "20121", "IT"),
          ("Utrecht", "3511", "NL")]


def _address(i: int) -> dict[str, str]:
    """Most customers have an address; every fifth has none."""
    if i % 5 == 4:
        return {}
    city, postcode, country = CITIES[i % len(CITIES)]
    return {"address_street": f"{LAST[i]}weg {i + 1}", "address_city": city,
            "address_postcode": postcode, "address_country": country}


TENANTS = ("north", "south")


def tenant_of(number: int) -> str:
    """The tenant of customer (or order) ``number``: even north, odd south."""
    return TENANTS[number % 2]


def demo_rows() -> list[tuple[type[Entity], list[dict[str, Any]]]]:
    grades = list(CustomerGrade)
    customers = [dict(
        id=_id("customer", i), tenantId=tenant_of(i), name=f"{FIRST[i]} {LAST[i]}",
        email=f"{FIRST[i].lower()}.{LAST[i].lower()}@example.com",
        grade=grades[i % 3], birthDate=datetime.date(1960 + i, 1 + i % 12, 1 + i),
        createdDate=datetime.datetime(2024, 1, 1, 9, 0) + datetime.timedelta(days=i),
        **_address(i),
        userId=_id("user", "bruno") if i == BRUNO_CUSTOMER else None,
    ) for i in range(20)]
    products = [dict(id=_id("product", i), name=product[0], sku=product[1],
                     price=decimal.Decimal(product[2]), description=product[3])
                for i, product in enumerate(PRODUCTS)]
    statuses = list(OrderStatus)
    orders: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    for i in range(50):
        order_lines: list[dict[str, Any]] = []
        for j in range(1 + i % 3):
            product = products[(i * 3 + j * 7) % len(products)]
            order_lines.append(dict(id=_id("line", f"{i}-{j}"), tenantId=tenant_of(i),
                                    order=_id("order", i),
                                    product=product["id"], quantity=1 + (i + j) % 4,
                                    price=product["price"]))
        amount = sum(line["price"] * line["quantity"] for line in order_lines)
        orders.append(dict(id=_id("order", i), tenantId=tenant_of(i), number=f"{i + 1:05d}",
                           date=datetime.date(2024, 1, 1) + datetime.timedelta(days=3 * i),
                           customer=customers[i % 20]["id"], status=statuses[i % 4],
                           amount=amount))
        lines.extend(order_lines)
    countries = [dict(id=code, name=name) for code, name in COUNTRIES]
    tags = [dict(name=name, internal=internal) for name, internal in TAGS]
    tenants = [dict(id=_id("tenant", key), tenantId=key, name=key.title()) for key in TENANTS]
    return [(Tenant, tenants), (Country, countries), (Tag, tags), (Customer, customers),
            (Product, products),
            (Order, orders), (OrderLine, lines)]


# Tag numbers (1-based, as the database assigns them) of each product; some
# products have none, some several, two an internal tag.
PRODUCT_TAGS = [(1, 4), (2,), (1, 2, 6), (), (3,), (2, 5), (1, 3, 5, 7), (5,), (), (2, 3, 5)]


def product_tag_rows(tag_ids: Sequence[int]) -> list[dict[str, Any]]:
    return [{"product": _id("product", i), "tag": tag_ids[number - 1]}
            for i, numbers in enumerate(PRODUCT_TAGS) for number in numbers]


# Demo sign-ins, documented in the README. Never use them outside the demo.
# admin is global (no tenant: every tenant's rows); the others belong to one.
SALES_READER_ROLES = "rest-minimal,sales-reader,public-tags"
DEMO_USERS = (
    dict(username="admin", password="admin-password", roles="system-full-access",
         firstName="Ada", lastName="Admin", email="admin@example.com", locale="en"),
    dict(username="alice", password="alice-password", roles=SALES_READER_ROLES, tenantId="north",
         firstName="Alice", lastName="Adler", email="alice.adler@example.com", locale="de"),
    dict(username="bob", password="bob-password", roles=SALES_READER_ROLES, tenantId="south",
         firstName="Bob", lastName="Brandt", email="bob.brandt@example.com", locale="en"),
    # The customer Bruno Berg (customer 1, of south) is this user: own-orders
    # and own-orders-writer let him see and write only that customer's orders.
    dict(username="bruno", password="bruno-password",
         roles="rest-minimal,sales-reader,own-orders,own-orders-writer,order-clerk",
         tenantId=tenant_of(1),
         firstName="Bruno", lastName="Berg", email="bruno.berg@example.com", locale="en"),
    # Each tenant's administrator: its users and their API keys, nothing else.
    dict(username="north-admin", password="north-admin-password",
         roles="rest-minimal,tenant-administration", tenantId="north",
         firstName="Nina", lastName="North", email="admin@north.example.com", locale="en"),
    dict(username="south-admin", password="south-admin-password",
         roles="rest-minimal,tenant-administration", tenantId="south",
         firstName="Sami", lastName="South", email="admin@south.example.com", locale="en"),
)
BRUNO_CUSTOMER = 1


@functools.lru_cache(maxsize=None)
def _password_hash(password: str) -> str:
    # Hashing is deliberately slow; a test run reloads the demo data many times.
    return hash_secret(password)


def demo_users() -> list[dict[str, Any]]:
    return [{"tenantId": None, **user, "id": _id("user", user["username"]),
             "password": _password_hash(user["password"])} for user in DEMO_USERS]


def load_demo_data(database: peewee.Database) -> bool:
    """Insert the demo rows when there are no customers yet, and the demo users
    when there are no users yet (idempotent)."""
    loaded = False
    with database.atomic():
        if not Customer.select().exists():
            # The demo's tenants, but for those an operator made first.
            known = {tenant.tenantId for tenant in Tenant.select(Tenant.tenantId)}
            for model, rows in demo_rows():
                if model is Tenant:
                    rows = [row for row in rows if row["tenantId"] not in known]
                for start in range(0, len(rows), 100):
                    model.insert_many(rows[start:start + 100]).execute()
            tag_ids = [tag.id for tag in Tag.select(Tag.id).order_by(Tag.id)]
            Product.tags.through_model.insert_many(product_tag_rows(tag_ids)).execute()
            loaded = True
        if not User.select().exists():
            User.insert_many(demo_users()).execute()
            loaded = True
    return loaded
