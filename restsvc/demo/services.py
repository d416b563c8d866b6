"""The demo's business services.

``orderService`` is exposed in code (``@rest_service``); ``productPriceService``
is a plain class exposed only by ``config/services.xml``.
"""
import dataclasses
import datetime
import decimal
import uuid
from collections.abc import Sequence
from typing import Any, Optional, cast

from restsvc import DataAccess, Record, rest_method, rest_service

from .model import Order, OrderStatus, Product

CENT = decimal.Decimal("0.01")


@dataclasses.dataclass
class OrderCriteria:
    """What ``summarize`` takes: a date range and, optionally, statuses."""
    fromDate: datetime.date
    toDate: datetime.date
    statuses: Optional[list[OrderStatus]] = None


@dataclasses.dataclass
class StatusTotal:
    status: OrderStatus
    count: int
    total: decimal.Decimal


@dataclasses.dataclass
class OrderSummary:
    fromDate: datetime.date
    toDate: datetime.date
    count: int
    total: decimal.Decimal
    byStatus: list[StatusTotal]


def _between(from_date: datetime.date, to_date: datetime.date,
             statuses: Sequence[OrderStatus] | None = None) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = [{"property": "date", "operator": ">=", "value": from_date.isoformat()},
                  {"property": "date", "operator": "<=", "value": to_date.isoformat()}]
    if statuses:
        conditions.append({"property": "status", "operator": "in",
                           "value": [status.name for status in statuses]})
    return {"conditions": conditions}


@rest_service
class OrderService:
    @rest_method
    def calculateTotal(self, orderId: uuid.UUID, data: DataAccess) -> decimal.Decimal:
        """The order's total (its amount, kept by createOrder and recalculate)."""
        order = data.load(Order, orderId, "_local")
        return order.amount if order.amount is not None else decimal.Decimal("0.00")

    @rest_method
    def ordersBetween(self, fromDate: datetime.date, toDate: datetime.date,
                      data: DataAccess) -> list[Order]:
        return data.search(Order, _between(fromDate, toDate), sort="date")

    @rest_method(http_methods=("POST",))
    def createOrder(self, order: Order, data: DataAccess) -> Order:
        """Store an order with its lines; lines without a price take the product's."""
        body = cast(Record, order)      # an entity parameter holds entity JSON
        for line in body.get("lines") or ():
            if isinstance(line, dict) and line.get("price") is None and line.get("product"):
                line["price"] = data.load(Product, line["product"]["id"], "_local").price
        saved = data.save(Order, body)
        self.recalculate(saved.id, data)
        return data.load(Order, saved.id, "order-with-details")

    @rest_method(http_methods=("POST",))
    def summarize(self, criteria: OrderCriteria, data: DataAccess) -> OrderSummary:
        """Counts and sums by status of the orders in a date range."""
        orders = data.search(Order, _between(criteria.fromDate, criteria.toDate,
                                             criteria.statuses), fetch_plan="_local")
        by_status: dict[OrderStatus, StatusTotal] = {}
        for order in orders:
            entry = by_status.setdefault(order.status, StatusTotal(order.status, 0,
                                                                    decimal.Decimal("0.00")))
            entry.count += 1
            entry.total += order.amount or 0
        return OrderSummary(criteria.fromDate, criteria.toDate, len(orders),
                            sum((e.total for e in by_status.values()), decimal.Decimal("0.00")),
                            list(by_status.values()))

    @rest_method(http_methods=("POST",))
    def recalculate(self, orderId: uuid.UUID, data: DataAccess) -> None:
        """Set the order's amount to the sum of its lines."""
        order = data.load(Order, orderId, {"properties": [
            {"name": "lines", "fetchPlan": {"properties": ["quantity", "price"]}}]})
        total = sum((line.price * line.quantity for line in order.lines if line.price is not None),
                    decimal.Decimal("0"))
        data.save(Order, {"amount": total.quantize(CENT)}, entity_id=orderId)


class ProductPriceService:
    """Exposed only through config/services.xml (no decorators)."""

    def price(self, productId: uuid.UUID, data: DataAccess, quantity: int = 1) -> decimal.Decimal:
        """The price of a quantity of the product."""
        return data.load(Product, productId, "_local").price * quantity

    def setPrice(self, productId: uuid.UUID, price: decimal.Decimal, data: DataAccess) -> Product:
        return data.save(Product, {"price": price}, entity_id=productId, fetch_plan="_local")


SERVICES = (OrderService(), ProductPriceService())
