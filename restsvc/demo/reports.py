"""Python band functions of the demo's reports (config/reports/sales.yaml)."""
from collections.abc import Iterator, Mapping
from typing import Any

from restsvc import DataAccess

from .model import OrderStatus


def orders_by_status(params: Mapping[str, Any], data: DataAccess) -> Iterator[dict[str, Any]]:
    """The "Internal audit" report: how many orders the caller can see per status.
    ``data`` is the caller's data access (as services get it): counts and rows
    go through the data manager with the caller's permissions."""
    for status in OrderStatus:
        condition = {"property": "status", "operator": "=", "value": status.name}
        yield {"status": status.name, "orders": data.count("Order", {"conditions": [condition]})}
