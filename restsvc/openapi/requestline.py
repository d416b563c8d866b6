"""What a request can carry. A GET's request line (method, path, query
string, protocol) is at most ``MAX_REQUEST_LINE`` bytes (gunicorn's largest
``limit_request_line``, restsvc/gunicorn_config.py); a longer one is answered
414. Each GET documents that answer, and an array in its query string gets
the ``maxItems`` that fits in the line (counted for the longest item where
items are bounded -- enums, ids, dates, numbers -- else for the shortest).
Every body is bounded (restsvc/bodies.py, the uploads' own limit): each
operation that takes one documents the 413 beyond it."""
from typing import Any
from urllib.parse import quote

from .parts import failures

MAX_REQUEST_LINE = 8190
_FRAME = len("GET ? HTTP/1.1")
# The longest text of a value of a bounded format, percent-encoded where it must be.
_FORMAT_LENGTHS = {"uuid": 36, "date": 10, "time": 18, "date-time": 40, "int32": 11,
                   "int64": 20}


def bound_requests(paths: dict[str, Any], schemas: dict[str, Any]) -> None:
    """What every operation of ``paths`` can carry: its request line, its body."""
    bound_gets(paths, schemas)
    bound_bodies(paths)


def bound_gets(paths: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Every GET of ``paths``: the 414 answer, and arrays that fit the request line."""
    for path, methods in paths.items():
        op = methods.get("get")
        if op is None:
            continue
        op["responses"] = dict(sorted({**op["responses"], **failures("UriTooLong")}.items()))
        for param in op.get("parameters", ()):
            schema = param.get("schema", {})
            if param.get("in") == "query" and schema.get("type") == "array":
                param["schema"] = _fitted(path, param["name"], schema, schemas)
                param["description"] = _description(param, param["schema"]["maxItems"],
                                                    "post" in methods)


def bound_bodies(paths: dict[str, Any]) -> None:
    """Every operation of ``paths`` that takes a body: the 413 answer."""
    for methods in paths.values():
        for op in methods.values():
            if isinstance(op, dict) and "requestBody" in op:
                op["responses"] = dict(sorted({**op["responses"],
                                               **failures("PayloadTooLarge")}.items()))


def _fitted(path: str, name: str, schema: dict[str, Any],
            schemas: dict[str, Any]) -> dict[str, Any]:
    item = _resolved(schema.get("items", {}), schemas)
    each = len("&") + len(quote(name, safe="")) + len("=") + _item_length(item)
    room = MAX_REQUEST_LINE - _FRAME - len(path.encode("utf-8"))
    fits = max(1, room // each)
    return {**schema, "maxItems": min(schema.get("maxItems", fits), fits)}


def _description(param: dict[str, Any], items: int, has_post: bool) -> str:
    said = param.get("description", "")
    return ((said + " " if said else "") +
            f"At most {items} values: the request line (method, path and query string) is at "
            f"most {MAX_REQUEST_LINE:,} bytes, and other parameters take part of it"
            + ("; POST takes longer lists in its body." if has_post else "."))


def _resolved(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    prefix = "#/components/schemas/"
    return schemas.get(ref[len(prefix):], {}) if ref.startswith(prefix) else schema


def _item_length(item: dict[str, Any]) -> int:
    """The longest text of an item where it is bounded, else its shortest (at least 1)."""
    if "enum" in item:
        return max((len(quote(str(value), safe="")) for value in item["enum"]), default=1)
    if item.get("type") == "boolean":
        return len("false")
    known = _FORMAT_LENGTHS.get(item.get("format", ""))
    if known is not None:
        return known
    if item.get("type") == "integer":
        return _FORMAT_LENGTHS["int64"]
    if "maxLength" in item:
        return 3 * 4 * int(item["maxLength"])      # a character: up to 4 bytes, each %XX
    return max(1, int(item.get("minLength", 1)))
