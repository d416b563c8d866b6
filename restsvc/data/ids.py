"""Entity ids from URLs and bodies, in the form loaded rows hold them."""
import re
from typing import TYPE_CHECKING

from ..errors import BadRequest, Text
from ..jsonio import JsonValue

if TYPE_CHECKING:
    from ..model.metadata import MetaClass

_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def parse_id(meta: "MetaClass", value: JsonValue) -> str | int:
    """An id from a URL or a body, in the form loaded rows hold it (a UUID
    already in canonical text form is taken as it is: no round trip through
    uuid.UUID); 400 Invalid entity ID otherwise."""
    if isinstance(value, str) and meta.id_kind == "uuid" and _CANONICAL_UUID.match(value):
        return value
    key = id_or_none(meta, value)
    if key is None:
        raise BadRequest("Invalid entity ID", Text(
            "invalidEntityId", "Cannot convert {value} into valid entity ID", value=value))
    return key


def id_or_none(meta: "MetaClass", value: JsonValue) -> str | int | None:
    """The row form of an id, or None when ``value`` cannot be one: integer
    ids come as JSON numbers or as their text ("42", how JSON shows them),
    string ids as non-empty text up to the column's length."""
    if meta.id_kind == "string":
        max_length = getattr(meta.model._meta.primary_key, "max_length", None)
        fits = isinstance(value, str) and 0 < len(value) <= (max_length or 255)
        return value if fits else None
    try:
        key: str | int = meta.row_id(meta.properties["id"].value_type.from_json(value))
        return key
    except (ValueError, TypeError, AttributeError, ArithmeticError):
        return None
