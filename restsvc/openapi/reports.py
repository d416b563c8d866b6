"""The Reports API in both documents: the operations and schemas of the
reports package's own document (``restsvc/reports/openapi.py``), placed at
the route table's paths with this document's security and errors."""
import re
from functools import lru_cache

from ..jsonio import JsonObject

from ..reports.openapi import BASE, reports_openapi

_PARAMETER = re.compile(r"\{[^}]*\}|<[^>]*>")


def _shape(path: str) -> str:
    """A path with its parameters blanked: ``/report/{id}`` and ``/report/<report_id>`` agree."""
    return _PARAMETER.sub("{}", path)


# (method, path shape) -> the reports document's operation; its component schemas.
_Reports = tuple[dict[tuple[str, str], JsonObject], dict[str, JsonObject]]


@lru_cache(maxsize=1)
def _reports() -> _Reports:
    document: JsonObject = reports_openapi()
    operations: dict[tuple[str, str], JsonObject] = {
        (method.upper(), _shape(BASE + path)): op
        for path, methods in document["paths"].items() for method, op in methods.items()}
    return operations, document["components"]["schemas"]


def report_schemas() -> dict[str, JsonObject]:
    return dict(_reports()[1])


def report_operation(method: str, rule: str) -> tuple[JsonObject, list[JsonObject]] | None:
    """``(operation, its path parameters' schemas in order)`` for a route, or None."""
    found = _reports()[0].get((method, _shape(rule)))
    if found is None:
        return None
    op = {key: value for key, value in found.items()
          if key not in ("security", "operationId", "parameters")}
    params = found.get("parameters", [])
    others = [p for p in params if p["in"] != "path"]
    if others:
        op["parameters"] = others
    return op, [p["schema"] for p in params if p["in"] == "path"]
