"""Report parameters: the run body's values, parsed per type (reference 10).

Values arrive as text: ``{"name": <alias>, "value": "2024-01-31"}``, or
``{"name": <alias>, "values": [...]}`` for ENTITY_LIST. Parameters the report
does not declare are ignored; a declared one that is missing takes its
default; a required one without either, or a malformed value, is a 400 that
names it. ENTITY values are ids, loaded through the data manager with the
caller's permissions (403 when the entity may not be read, 404 when the row
does not exist or is hidden from the caller).
"""
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..data.ids import parse_id
from ..data.read.queries import fill_filter, parameter_reference
from ..errors import ApiError, BadRequest
from ..jsonio import JsonObject, JsonValue
from ..model.valuetypes import MAX_ARRAY_ITEMS

if TYPE_CHECKING:
    from ..model.metadata import MetaClass
    from .definitions import Parameter, Report

# A parameter's parsed value: its datatype's Python value, an enum member, or
# an entity's JSON (a list of them for ENTITY_LIST), which is any JSON.
Value = Any
# load_entity(meta, id): one entity's JSON for the caller, or raise.
LoadEntity = Callable[["MetaClass", Any], JsonValue]
_FORMATS = {"NUMERIC": "a number such as 12.5", "BOOLEAN": "true or false",
            "DATE": "yyyy-MM-dd", "DATETIME": "yyyy-MM-ddTHH:mm:ss[.SSS]", "TIME": "HH:mm:ss",
            "ENUMERATION": "a constant name of the enum", "ENTITY": "an entity id",
            "ENTITY_LIST": "an array of entity ids"}


def run_error(details: str) -> BadRequest:
    return BadRequest("Run report error", details)


def parse_text(parameter: "Parameter", text: object) -> Value:
    """One text value -> its Python value; ValueError/TypeError when malformed.
    ENTITY ids come back in canonical text form (``Invalid entity ID`` otherwise)."""
    if not isinstance(text, str):
        raise TypeError("expected a string")
    if parameter.entity is not None:
        return parse_id(parameter.entity, text)
    return parameter.value_type.from_text(text)


def _filter_form(parameter: "Parameter", value: Value) -> JsonValue:
    """A parsed value as search filters take it (entities: their ids)."""
    if parameter.type == "ENTITY":
        return value["id"]
    if parameter.type == "ENTITY_LIST":
        return [item["id"] for item in value]
    return parameter.value_type.to_json(value)


def sample_filter_values(parameters: "Iterable[Parameter]") -> dict[str, JsonValue]:
    """A valid filter value of each parameter's type, for checking filters at startup."""
    samples: dict[str, JsonValue] = {}
    for parameter in parameters:
        value_type = parameter.value_type
        if parameter.entity is not None:
            samples[parameter.alias] = value_type.sample
        else:
            samples[parameter.alias] = value_type.to_json(value_type.from_text(value_type.sample))
    return samples


@dataclass(frozen=True)
class Bound:
    """A run's parameter values: for band functions (Python values; entities as
    their JSON with ``_instanceName``), for filters (JSON forms) and as text
    for file names. Absent optional parameters are None."""
    python: dict[str, Value]
    filter: dict[str, JsonValue]
    text: dict[str, JsonValue]


def _raw_values(body_parameters: JsonValue) -> dict[str, JsonValue]:
    if body_parameters is None:
        return {}
    if not isinstance(body_parameters, list):
        raise BadRequest("Invalid JSON body", "parameters must be an array")
    raw: dict[str, JsonValue] = {}
    for item in body_parameters:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadRequest("Invalid JSON body",
                             'each parameter is {"name": ..., "value": ...} or {"name": ..., "values": [...]}')
        raw[item["name"]] = item["values"] if "values" in item else item.get("value")
    return raw


def bind(report: "Report", body_parameters: JsonValue, load_entity: LoadEntity) -> Bound:
    """Parse the body's parameters for ``report``. ``load_entity(meta, id)``
    loads one entity for the caller (JSON with ``_instanceName``) or raises."""
    raw = _raw_values(body_parameters)
    python: dict[str, Value] = {}
    filters: dict[str, JsonValue] = {}
    texts: dict[str, JsonValue] = {}
    for parameter in report.parameters:
        value = raw.get(parameter.alias)
        if value is None:
            value = parameter.default
        if value is None or value == []:
            if parameter.required:
                raise run_error(f"Required report parameter {parameter.alias} not found")
            python[parameter.alias] = filters[parameter.alias] = texts[parameter.alias] = None
            continue
        parsed = _parse(parameter, value, load_entity)
        python[parameter.alias] = parsed
        filters[parameter.alias] = _filter_form(parameter, parsed)
        texts[parameter.alias] = _text_form(parameter, parsed)
    return Bound(python, filters, texts)


def _parse(parameter: "Parameter", value: JsonValue, load_entity: LoadEntity) -> Value:
    if parameter.type == "ENTITY_LIST":
        items = value if isinstance(value, list) else [value]
        if len(items) > MAX_ARRAY_ITEMS:
            raise run_error(f"Parameter {parameter.alias} has more than {MAX_ARRAY_ITEMS} values")
        return [_parse_one(parameter, item, load_entity) for item in items]
    if isinstance(value, list):
        raise run_error(f"Invalid value of parameter {parameter.alias}: one value expected")
    return _parse_one(parameter, value, load_entity)


def _parse_one(parameter: "Parameter", text: JsonValue, load_entity: LoadEntity) -> Value:
    try:
        parsed = parse_text(parameter, text)
    except ApiError:
        raise
    except (ValueError, TypeError, ArithmeticError):
        raise run_error(f"Invalid value of parameter {parameter.alias}: expected "
                        f"{_FORMATS.get(parameter.type, 'text')}") from None
    if parameter.type in ("ENTITY", "ENTITY_LIST"):
        assert parameter.entity is not None     # the loader makes sure
        return load_entity(parameter.entity, parsed)
    return parsed


def _text_form(parameter: "Parameter", parsed: Value) -> JsonValue:
    """The text for file names (an entity's instance name, else its id)."""
    if parameter.type == "ENTITY":
        return parsed.get("_instanceName") or parsed["id"]
    if parameter.type == "ENTITY_LIST":
        return ",".join(item.get("_instanceName") or item["id"] for item in parsed)
    return parameter.value_type.to_text(parsed)


def filter_for(spec: JsonObject | None, bound: Bound) -> JsonObject | None:
    """The band's filter with the parameters' values in place; a condition on
    an optional parameter that was not given is left out."""
    if spec is None:
        return None
    absent = {alias for alias, value in bound.filter.items() if value is None}
    filled: JsonObject = fill_filter(_without_absent(spec, absent), bound.filter)
    return filled


def _without_absent(spec: JsonObject, absent: set[str]) -> JsonObject:
    conditions: list[JsonValue] = []
    for item in spec.get("conditions") or ():
        if isinstance(item, dict) and "group" in item:
            conditions.append({**item, "conditions": _without_absent(item, absent)["conditions"]})
        elif not (isinstance(item, dict) and _mentions(item.get("value"), absent)):
            conditions.append(item)
    return {**spec, "conditions": conditions}


def _mentions(value: JsonValue, aliases: set[str]) -> bool:
    if isinstance(value, list):
        return any(_mentions(item, aliases) for item in value)
    return parameter_reference(value) in aliases
