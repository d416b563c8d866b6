"""The demo sales application: customers, products, orders and their lines."""
import datetime
import enum
from collections.abc import Iterable

import peewee

from restsvc import (DateTimeField, Embedded, Entity, EnumField, FileRefField, embeddable, entity,
                     transient)


class CustomerGrade(enum.Enum):
    BRONZE = "B"
    SILVER = "S"
    GOLD = "G"


class OrderStatus(enum.Enum):
    NEW = "10"
    PAID = "20"
    SHIPPED = "30"
    CANCELLED = "40"


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def check_birth_date(customer: "Customer") -> list[tuple[str, str]]:
    """An application validator: returns (attribute path, message) pairs."""
    if customer.birthDate and customer.birthDate > datetime.date.today():
        return [("birthDate", "must not be in the future")]
    return []


def check_price(row: "Product | OrderLine") -> list[tuple[str, str]]:
    """A price (of a product or an order line) is never negative; no price is allowed."""
    if row.price is not None and row.price < 0:
        return [("price", "must be greater than or equal to 0")]
    return []


def check_quantity(line: "OrderLine") -> list[tuple[str, str]]:
    if line.quantity is not None and line.quantity <= 0:
        return [("quantity", "must be greater than 0")]
    return []


@entity(instance_name="name")
class Country(Entity):
    """A string id the application assigns: the ISO 3166 alpha-2 code ("DE")."""
    id = peewee.CharField(primary_key=True, max_length=2)
    name = peewee.CharField(max_length=100, index=True)


@entity(instance_name="name", natural_key="name")
class Tag(Entity):
    """An integer id the database assigns (JSON writes it as a string, "42")."""
    id = peewee.AutoField()
    name = peewee.CharField(max_length=50, unique=True, index=True)
    internal = peewee.BooleanField(default=False)


@embeddable
class Address:
    """An embedded value: columns address_street, address_city, ... of its owner."""
    street = peewee.CharField(max_length=200, null=True)
    city = peewee.CharField(max_length=100, null=True, index=True)
    postcode = peewee.CharField(max_length=20, null=True)
    country = peewee.ForeignKeyField(Country, null=True, on_delete="RESTRICT")


@entity(instance_name="name", validators=(check_birth_date,), audited=True, history=True,
        soft_delete=True, events=True, natural_key="email", search={"name": "A"}, tenant=True)
class Customer(Entity):
    name = peewee.CharField(max_length=200, index=True)
    email = peewee.CharField(max_length=200, null=True, index=True)
    grade = EnumField(CustomerGrade, null=True)
    birthDate = peewee.DateField(null=True, index=True)
    photo = FileRefField(null=True)
    # An audit field (``audited``): declared here to keep its index and the
    # stored column's default; the write path fills it.
    createdDate = DateTimeField(default=_now, index=True)
    # The id of the User who is this customer, if any: what the own-orders
    # row-level role keys on (an id never changes; a username or email can).
    userId = peewee.UUIDField(null=True, index=True)
    address = Embedded(Address)


PRODUCT_WITH_TAGS = {
    "name": "product-with-tags",
    "extends": "_base",
    "properties": [{"name": "tags", "fetchPlan": "_base"}],
}


@entity(instance_name="name", validators=(check_price,), fetch_plans=(PRODUCT_WITH_TAGS,),
        soft_delete=True, natural_key="sku", search={"name": "A", "description": "B"})
class Product(Entity):
    name = peewee.CharField(max_length=200, index=True)
    description = peewee.TextField(null=True)
    sku = peewee.CharField(max_length=64, null=True, index=True)   # unique among live rows: below
    price = peewee.DecimalField(max_digits=12, decimal_places=2)
    # Many-to-many, readable from the other side as Tag.products; restsvc
    # creates the link table (product_tag_through).
    tags = peewee.ManyToManyField(Tag, backref="products")
    # Added by soft_delete; declared (as it adds it) for the partial index below.
    deletedDate = DateTimeField(null=True)


# A partial unique index: a soft-deleted product's SKU may be used again.
Product.add_index(peewee.ModelIndex(Product, (Product.sku,), unique=True, name="product_sku_live",
                                    where=Product.deletedDate.is_null()))


ORDER_WITH_DETAILS = {
    "name": "order-with-details",
    "extends": "_local",
    "properties": [
        "itemCount",
        {"name": "customer", "fetchPlan": "_base"},
        {"name": "lines", "fetchPlan": {
            "extends": "_local",
            "properties": [{"name": "product", "fetchPlan": "_base"}]}},
    ],
}


@entity(instance_name="number", compositions=("lines",), fetch_plans=(ORDER_WITH_DETAILS,),
        audited=True, history=True, soft_delete=True, events=True, tenant=True)
class Order(Entity):
    number = peewee.CharField(max_length=32, index=True)
    date = peewee.DateField(index=True)
    customer = peewee.ForeignKeyField(Customer, on_delete="RESTRICT")    # indexed, as every FK
    status = EnumField(OrderStatus, null=True)
    amount = peewee.DecimalField(max_digits=14, decimal_places=2, null=True)

    # The backref of OrderLine.order, declared for type checkers.
    lines: Iterable["OrderLine"]

    class Meta:     # Peewee's multi-column form: orders of one status, by date
        indexes = ((("status", "date"), False),)

    @transient("int")
    def itemCount(self) -> int:
        """Total quantity over the order's lines."""
        return sum(line.quantity for line in self.lines)


@entity(instance_name=("product",), validators=(check_quantity, check_price), audited=True,
        history=True, soft_delete=True, tenant=True)
class OrderLine(Entity):
    order = peewee.ForeignKeyField(Order, backref="lines", on_delete="CASCADE")
    product = peewee.ForeignKeyField(Product, on_delete="RESTRICT")
    quantity = peewee.IntegerField()
    price = peewee.DecimalField(max_digits=12, decimal_places=2, null=True)


ENTITIES = (Country, Tag, Customer, Product, Order, OrderLine)
