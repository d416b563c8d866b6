"""What a service method returns, as the answer's body (reference 4.2).

- None: no body (204);
- a simple value (str, int, float, Decimal, bool, UUID, date, datetime,
  time, an enum, a FileRef): its datatype's text form, ``text/plain``;
- a Record or a list of Records: entity JSON, attributes the caller may not
  read left out (also in nested references);
- a dataclass, dict or other list: a JSON object or array, nulls left out,
  values in their JSON forms, Records inside as entity JSON.
"""
import dataclasses
import enum
from collections.abc import Callable
from typing import cast

from ..data.bound import Record, to_entity_json
from ..files.refs import FileRef
from ..jsonio import JsonValue
from ..model.datatypes import DATATYPES
from ..model.valuetypes import PYTHON_TYPES
from ..security.roles import Permissions


@dataclasses.dataclass(frozen=True)
class Result:
    kind: str          # "empty", "text" or "json"
    body: object = None


def shape_result(value: object, permissions: Permissions) -> Result:
    if value is None:
        return Result("empty")
    text = _text(value)
    if text is not None:
        return Result("text", text)
    return Result("json", to_json(value, permissions))


def _text(value: object) -> str | None:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, FileRef):
        return str(value)
    name = PYTHON_TYPES.get(type(value))
    if name is None:
        return None
    # model/datatypes.py declares a Datatype's converters ``object``.
    to_text = cast(Callable[[object], str], DATATYPES[name].to_text)
    return to_text(value)


def to_json(value: object, permissions: Permissions) -> JsonValue:
    if isinstance(value, Record):
        return to_entity_json(value, permissions)
    if isinstance(value, (list, tuple)):
        return [to_json(item, permissions) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {item.name: getattr(value, item.name) for item in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): to_json(item, permissions) for key, item in value.items()
                if item is not None}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, FileRef):
        return str(value)
    name = PYTHON_TYPES.get(type(value))
    if name is None:
        raise TypeError(f"a service result of type {type(value).__name__} cannot be written as JSON")
    to_json_value = cast(Callable[[object], JsonValue], DATATYPES[name].to_json)
    return to_json_value(value)
