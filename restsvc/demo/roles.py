"""The demo's roles, declared in code and handed to ``Application``."""
from restsvc import ResourceRole, RowLevelRole

# Read-only sales access. Customer.email is hidden by listing the attributes
# that are visible rather than by a later exception: new attributes stay
# hidden until someone decides otherwise (in reports too). File download,
# not upload. It runs the two REST-available sales reports.
SALES_READER = ResourceRole(
    "sales-reader", "Sales: read only",
    entities={"Customer": "read", "Order": "read", "OrderLine": "read", "Product": "read",
              "Tag": "read", "Country": "read"},
    attributes={
        "Customer": {name: "view" for name in ("name", "grade", "birthDate", "photo",
                                               "createdDate", "address", "tenantId")},
        "Order": {"*": "view"},
        "OrderLine": {"*": "view"},
        "Product": {"*": "view"},
        "Tag": {"*": "view"},
        "Country": {"*": "view"},
    },
    specifics=("rest.enabled", "rest.fileDownload.enabled", "reports.rest.enabled"),
    scope=("API",),
    # The service methods that only read; none that writes.
    services=("orderService.calculateTotal", "orderService.ordersBetween",
              "orderService.summarize", "productPriceService.price"),
    reports=("customers", "orders-by-period"),
)

# A row-level example: a caller sees only the orders of the customer that is
# the caller's own User. The data layer applies it to every load. It keys on
# the user's id, which nobody can change, not on the username or email, which
# user managers can (restsvc/docs/security.md "Which session value to key a rule on"). A
# holder of this rule only views Customer.userId, whatever its resource roles
# grant (security/roles.py): set on another customer, it would make that
# customer's orders the holder's own.
OWN_ORDERS = RowLevelRole(
    "own-orders", "Own orders",
    filters={"Order": {"conditions": [
        {"property": "customer.userId", "operator": "=", "value": ":session$userId"}]}},
)

# Row rules on writes: a customer signed in as a user (bruno) creates and
# changes only the orders of the customer that is their own, and a SHIPPED
# order is final for them: they can neither change nor delete it, nor mark
# an order SHIPPED (shipping is the sales office's). A composition child is
# part of its order: a line of such an order is refused likewise.
_OWN_CUSTOMER = {"property": "customer.userId", "operator": "=", "value": ":session$userId"}
_NOT_SHIPPED = {"group": "OR", "conditions": [
    {"property": "status", "operator": "isNull", "value": True},
    {"property": "status", "operator": "<>", "value": "SHIPPED"}]}
OWN_ORDERS_WRITER = RowLevelRole(
    "own-orders-writer", "Own orders: write",
    writes={"Order": {"create": {"conditions": [_OWN_CUSTOMER]},
                      "update": {"conditions": [_OWN_CUSTOMER, _NOT_SHIPPED]},
                      "delete": {"conditions": [_OWN_CUSTOMER, _NOT_SHIPPED]}}},
)

# Internal tags (pricing, clearance) are for the sales office only: the
# demo's sales readers (the reader client, alice) hold this rule, so such a
# tag is neither shown among a product's tags nor found, nor settable by them.
PUBLIC_TAGS = RowLevelRole(
    "public-tags", "Public tags only",
    filters={"Tag": {"conditions": [{"property": "internal", "operator": "=", "value": False}]}},
)

# What a customer placing orders needs besides sales-reader: orders and their
# lines to write, and the service method that places an order.
ORDER_CLERK = ResourceRole(
    "order-clerk", "Sales: place orders",
    entities={"Order": "*", "OrderLine": "*"},
    attributes={"Order": {"*": "modify"}, "OrderLine": {"*": "modify"}},
    scope=("API",),
    services=("orderService.createOrder",),
)


# Reads what sales readers read (so not Customer.email), and what an audit
# needs besides: who created, changed and deleted each row and when (the
# audit and deletion fields sales readers do not see on Customer), the
# entity log (HistoryItem) and deleted rows; changes nothing.
_WHO_AND_WHEN = ("createdBy", "lastModifiedBy", "lastModifiedDate", "deletedBy", "deletedDate")
AUDITOR = ResourceRole(
    "auditor", "Audit: history and deleted rows",
    entities={**SALES_READER.entities, "HistoryItem": "read"},
    attributes={**SALES_READER.attributes,
                "Customer": {**SALES_READER.attributes["Customer"],
                             **dict.fromkeys(_WHO_AND_WHEN, "view")},
                "HistoryItem": {"*": "view"}},
    specifics=("rest.enabled", "rest.deleted.read"),
    scope=("API",),
)

RESOURCE_ROLES = (SALES_READER, ORDER_CLERK, AUDITOR)
ROW_LEVEL_ROLES = (OWN_ORDERS, OWN_ORDERS_WRITER, PUBLIC_TAGS)
