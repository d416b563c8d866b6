"""Query functions of the demo, named in config/queries.xml by ``<function>``.

A query function takes the declared parameters, already converted to their
JSON form (numbers, booleans, ISO strings, enum constant names, ids), and the
caller's ``Access`` (``access.session["username"]``), and returns a search
filter of the entities API, or None for every row.
"""
import datetime
from collections.abc import Mapping
from typing import Any

from restsvc import Access, invalid_parameter


def orders_of_month(params: Mapping[str, Any], access: Access) -> dict[str, Any]:
    """Orders dated within one calendar month: a range computed from the parameters."""
    year, month = params["year"], params["month"]
    if not 1 <= year <= 9998:
        raise invalid_parameter("year")
    if not 1 <= month <= 12:
        raise invalid_parameter("month")
    first = datetime.date(year, month, 1)
    following = datetime.date(year + month // 12, month % 12 + 1, 1)
    return {"conditions": [
        {"property": "date", "operator": ">=", "value": first.isoformat()},
        {"property": "date", "operator": "<", "value": following.isoformat()}]}
