"""Report parameters: the run body's values, parsed per type (reference 10).

Values arrive as text: ``{"name": <alias>, "value": "2024-01-31"}``, or
``{"name": <alias>, "values": [...]}`` for ENTITY_LIST. Parameters the report
does not declare are ignored; a declared one that is missing takes its
default; a required one without either, or a malformed value, is a 400 that
names it. ENTITY values are ids, loaded through the data manager with the
caller's permissions (403 when the entity may not be read, 404 when the row
does not exist or is hidden from the caller).
"""
import uuid
from dataclasses import dataclass

from ..data.filters import MAX_IN_VALUES
from ..data.importer import parse_id
from ..data.queries import fill_filter, parameter_reference
from ..errors import ApiError, BadRequest
from . import values

_SAMPLE_TEXT = {"TEXT": "x", "NUMERIC": "0", "BOOLEAN": "true", "DATE": "2000-01-01",
                "DATETIME": "2000-01-01T00:00:00", "TIME": "00:00:00"}
_FORMATS = {"NUMERIC": "a number such as 12.5", "BOOLEAN": "true or false",
            "DATE": "yyyy-MM-dd", "DATETIME": "yyyy-MM-ddTHH:mm:ss[.SSS]", "TIME": "HH:mm:ss",
            "ENUMERATION": "a constant name of the enum", "ENTITY": "an entity id",
            "ENTITY_LIST": "an array of entity ids"}


def run_error(details):
    return BadRequest("Run report error", details)


def parse_text(parameter, text):
    """One text value -> its Python value; ValueError/TypeError when malformed.
    ENTITY ids come back in canonical text form (``Invalid entity ID`` otherwise)."""
    kind = parameter.type
    if kind in values.PARAMETER_DATATYPES:
        return values.parse_parameter(values.PARAMETER_DATATYPES[kind], text)
    if not isinstance(text, str):
        raise TypeError("expected a string")
    if kind == "ENUMERATION":
        member = parameter.enum.member(text)
        if member is None:
            raise ValueError("not a constant of the enum")
        return member
    return parse_id(parameter.entity, text)


def _filter_form(parameter, value):
    """A parsed value as search filters take it."""
    kind = parameter.type
    if kind in values.PARAMETER_DATATYPES:
        return values.filter_value(values.PARAMETER_DATATYPES[kind], value)
    if kind == "ENUMERATION":
        return value.name
    if kind == "ENTITY":
        return value["id"]
    return [item["id"] for item in value]


def sample_filter_values(parameters):
    """A valid filter value of each parameter's type, for checking filters at startup."""
    samples = {}
    for parameter in parameters:
        if parameter.type in ("ENTITY", "ENTITY_LIST"):
            entity = {"id": str(uuid.UUID(int=0))}
            value = [entity] if parameter.type == "ENTITY_LIST" else entity
        elif parameter.type == "ENUMERATION":
            value = next(iter(parameter.enum.enum_class))
        else:
            value = parse_text(parameter, _SAMPLE_TEXT[parameter.type])
        samples[parameter.alias] = _filter_form(parameter, value)
    return samples


@dataclass(frozen=True)
class Bound:
    """A run's parameter values: for band functions (Python values; entities as
    their JSON with ``_instanceName``), for filters (JSON forms) and as text
    for file names. Absent optional parameters are None."""
    python: dict
    filter: dict
    text: dict


def _raw_values(body_parameters):
    if body_parameters is None:
        return {}
    if not isinstance(body_parameters, list):
        raise BadRequest("Invalid JSON body", "parameters must be an array")
    raw = {}
    for item in body_parameters:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadRequest("Invalid JSON body",
                             'each parameter is {"name": ..., "value": ...} or {"name": ..., "values": [...]}')
        raw[item["name"]] = item["values"] if "values" in item else item.get("value")
    return raw


def bind(report, body_parameters, load_entity):
    """Parse the body's parameters for ``report``. ``load_entity(meta, id)``
    loads one entity for the caller (JSON with ``_instanceName``) or raises."""
    raw = _raw_values(body_parameters)
    python, filters, texts = {}, {}, {}
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
        texts[parameter.alias] = _text_form(parameter, parsed, value)
    return Bound(python, filters, texts)


def _parse(parameter, value, load_entity):
    if parameter.type == "ENTITY_LIST":
        items = value if isinstance(value, list) else [value]
        if len(items) > MAX_IN_VALUES:
            raise run_error(f"Parameter {parameter.alias} has more than {MAX_IN_VALUES} values")
        return [_parse_one(parameter, item, load_entity) for item in items]
    if isinstance(value, list):
        raise run_error(f"Invalid value of parameter {parameter.alias}: one value expected")
    return _parse_one(parameter, value, load_entity)


def _parse_one(parameter, text, load_entity):
    try:
        parsed = parse_text(parameter, text)
    except ApiError:
        raise
    except (ValueError, TypeError, ArithmeticError):
        raise run_error(f"Invalid value of parameter {parameter.alias}: expected "
                        f"{_FORMATS.get(parameter.type, 'text')}") from None
    if parameter.type in ("ENTITY", "ENTITY_LIST"):
        return load_entity(parameter.entity, parsed)
    return parsed


def _text_form(parameter, parsed, raw):
    if parameter.type == "ENTITY":
        return parsed.get("_instanceName") or parsed["id"]
    if parameter.type == "ENTITY_LIST":
        return ",".join(item.get("_instanceName") or item["id"] for item in parsed)
    if parameter.type == "ENUMERATION":
        return parsed.name
    return str(raw)


def filter_for(spec, bound):
    """The band's filter with the parameters' values in place; a condition on
    an optional parameter that was not given is left out."""
    if spec is None:
        return None
    absent = {alias for alias, value in bound.filter.items() if value is None}
    return fill_filter(_without_absent(spec, absent), bound.filter)


def _without_absent(spec, absent):
    conditions = []
    for item in spec.get("conditions") or ():
        if isinstance(item, dict) and "group" in item:
            conditions.append({**item, "conditions": _without_absent(item, absent)["conditions"]})
        elif not (isinstance(item, dict) and _mentions(item.get("value"), absent)):
            conditions.append(item)
    return {**spec, "conditions": conditions}


def _mentions(value, aliases):
    if isinstance(value, list):
        return any(_mentions(item, aliases) for item in value)
    return parameter_reference(value) in aliases
