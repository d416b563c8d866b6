"""The predefined queries file (``svc.rest.queries-config``), read and checked once.

    <queries>
      <query name="ordersByStatus" entity="Order" fetchPlan="order-with-details" limit="100">
        <filter>{"conditions": [{"property": "status", "operator": "=", "value": ":status"}]}</filter>
        <params><param name="status" type="restsvc.demo.model.OrderStatus"/></params>
      </query>
      <query name="ordersOfMonth" entity="Order" fetchPlan="_local">
        <function name="restsvc.demo.queries:orders_of_month"/>
        <params>...</params>
      </query>
    </queries>

The reference's format with ``<filter>`` or ``<function>`` in place of
``<jpql>``; an XML namespace on the root is accepted and ignored. Every query
is checked against the metadata here: entity, fetch plan, parameter types and
the filter itself (with a sample value of each parameter's type, so a
parameter that cannot fit the attribute it is compared with fails here and
not at request time). DTDs are refused, so entity expansion cannot happen.
"""
import dataclasses
import importlib
import pathlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ... import xmlfile
from ...errors import ApiError
from ...jsonio import JsonObject, JsonValue, loads
from ...xmlfile import local_name
from .filters import parse_filter
from .queries import (ALL, PARAM_NAME, SESSION_PARAMETERS, Query, QueryParam, fill_filter,
                      make_param, parameter_reference)

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, Metadata

_QUERY_ATTRIBUTES = {"name", "entity", "fetchPlan", "view", "limit", "offset",
                     "cacheable", "anonymousAllowed"}   # the last two: accepted, no effect
_SESSION_SAMPLES = {"username": "x", "userId": "00000000-0000-0000-0000-000000000000"}


class QueryConfigError(ValueError):
    """A predefined queries file that cannot work; the message says where."""


def parse_xml(data: bytes) -> ET.Element:
    try:
        root: ET.Element = xmlfile.parse_xml(data)[0]
        return root
    except xmlfile.XmlFileError as exc:
        raise QueryConfigError(str(exc)) from None


def load_queries(path: pathlib.Path, metadata: "Metadata") -> list[Query]:
    """All queries of the file at ``path``; QueryConfigError names the problem."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise QueryConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return read_queries(parse_xml(data), metadata)
    except QueryConfigError as exc:
        raise QueryConfigError(f"{path}: {exc}") from None


def read_queries(root: ET.Element, metadata: "Metadata") -> list[Query]:
    if local_name(root.tag) != "queries":
        raise QueryConfigError(f"the root element must be <queries>, not <{local_name(root.tag)}>")
    queries: list[Query] = []
    seen: set[tuple[str, str]] = set()
    for element in root:
        if local_name(element.tag) != "query":
            raise QueryConfigError(f"unexpected element <{local_name(element.tag)}> in <queries>")
        query = _query(element, metadata)
        key = (query.entity.name, query.name)
        if key in seen:
            raise QueryConfigError(f"query {query.name}: declared twice for entity {query.entity.name}")
        seen.add(key)
        queries.append(query)
    return queries


def _query(element: ET.Element, metadata: "Metadata") -> Query:
    name = element.get("name")
    label = f"query {name}" if name else "a query without a name"
    try:
        return _build(element, metadata, name)
    except QueryConfigError as exc:
        raise QueryConfigError(f"{label}: {exc}") from None


def _build(element: ET.Element, metadata: "Metadata", name: str | None) -> Query:
    unknown = sorted(set(element.attrib) - _QUERY_ATTRIBUTES)
    if unknown:
        raise QueryConfigError(f"unknown attribute {unknown[0]}")
    plan_name = element.get("fetchPlan") or element.get("view")
    if not name or not element.get("entity") or not plan_name:
        raise QueryConfigError("attributes name, entity and fetchPlan are required")
    if name == ALL:
        raise QueryConfigError("the name all is reserved for the implicit query of every entity")
    meta = metadata.entity(element.get("entity", ""))
    if meta is None:
        raise QueryConfigError(f"unknown entity {element.get('entity')}")
    if plan_name not in meta.fetch_plans:
        raise QueryConfigError(f"unknown fetch plan {plan_name} of entity {meta.name}")
    children: dict[str, ET.Element] = {}
    for child in element:
        tag = local_name(child.tag)
        if tag == "jpql":
            raise QueryConfigError("<jpql> is not supported; write a <filter> or a <function>")
        if tag not in ("filter", "function", "params") or tag in children:
            raise QueryConfigError(f"unexpected element <{tag}>")
        children[tag] = child
    if ("filter" in children) == ("function" in children):
        raise QueryConfigError("give exactly one of <filter> and <function>")
    params = _params(children.get("params"), metadata)
    query = Query(name, meta, plan_name, _number(element, "limit"), _number(element, "offset"), params)
    if "function" in children:
        return dataclasses.replace(query, function=_function(children["function"]))
    return dataclasses.replace(query, filter=_filter(children["filter"].text, meta, params))


def _number(element: ET.Element, attribute: str) -> int | None:
    text = element.get(attribute)
    if text is None:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", text.strip()):
        raise QueryConfigError(f"{attribute} must be a whole number, not {text!r}")
    return int(text)


def _params(element: ET.Element | None, metadata: "Metadata") -> tuple[QueryParam, ...]:
    if element is None:
        return ()
    params: list[QueryParam] = []
    for child in element:
        name, declared = child.get("name"), child.get("type")
        if local_name(child.tag) != "param" or not name or not declared:
            raise QueryConfigError("<params> holds <param name=... type=...> elements only")
        if not PARAM_NAME.match(name):
            raise QueryConfigError(f"parameter name {name!r} is not a valid name")
        if any(p.name == name for p in params):
            raise QueryConfigError(f"parameter {name} is declared twice")
        param = make_param(metadata, name, declared)
        if param is None:
            raise QueryConfigError(f"parameter {name}: unknown type {declared}")
        params.append(param)
    return tuple(params)


def _function(element: ET.Element) -> Callable[..., JsonValue]:
    reference = element.get("name") or ""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise QueryConfigError(f"<function name=...> must be module.path:callable, not {reference!r}")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise QueryConfigError(f"cannot load function {reference}: {exc}") from None
    if not callable(function):
        raise QueryConfigError(f"{reference} is not callable")
    checked: Callable[..., JsonValue] = function
    return checked


def _filter(text: str | None, meta: "MetaClass", params: Sequence[QueryParam]) -> JsonObject:
    try:
        parsed = loads(text or "")
    except (ValueError, RecursionError):
        raise QueryConfigError("<filter> is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise QueryConfigError('<filter> must be a JSON object {"conditions": [...]}')
    spec: JsonObject = _session_names(parsed)      # a dict stays a dict
    declared = {p.name: p for p in params}
    used: set[str] = set()
    for condition in filter_conditions(spec):
        names = parameter_references(condition.get("value"))
        for name in names:
            if name not in declared:
                raise QueryConfigError(f"<filter> refers to :{name}, which is not a declared parameter")
        if names:
            _check_parameters(meta, condition, [declared[name] for name in names])
        used.update(names)
    unused = [p.name for p in params if p.name not in used]
    if unused:
        raise QueryConfigError(f"parameter {unused[0]} is declared but the <filter> does not use it")
    problem = filter_problem(meta, fill_filter(spec, {p.name: p.sample for p in params}))
    if problem:
        raise QueryConfigError(f"<filter>: {problem}")
    return spec


def _check_parameters(meta: "MetaClass", condition: JsonObject,
                      params: Sequence[QueryParam]) -> None:
    """The condition's property must exist, and sample values of the
    parameters' types must be accepted where they stand."""
    shape = {key: value for key, value in condition.items() if key != "value"}
    problem = filter_problem(meta, {"conditions": [{**shape, "operator": "isNull"}]})
    if problem:
        raise QueryConfigError(f"<filter>: {problem}")
    problem = filter_problem(meta, {"conditions": [fill_filter(condition, {p.name: p.sample for p in params})]})
    if problem:
        described = ", ".join(f"{p.name} of type {p.type}" for p in params)
        raise QueryConfigError(f"parameter {described} does not fit the condition "
                               f"{condition.get('property')} {condition.get('operator')} ({problem})")


def filter_problem(meta: "MetaClass", spec: JsonValue) -> str | None:
    """What the filter parser says is wrong with ``spec``, or None."""
    try:
        parse_filter(meta, spec, None, _SESSION_SAMPLES)
    except ApiError as exc:
        problem: str = exc.details or exc.error
        return problem
    return None


def filter_conditions(spec: JsonValue) -> Iterator[JsonObject]:
    """The property conditions of a filter, through its groups."""
    items = spec.get("conditions") if isinstance(spec, dict) else None
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict):
            if "group" in item:
                yield from filter_conditions(item)
            else:
                yield item


def parameter_references(value: JsonValue) -> list[str]:
    if isinstance(value, list):
        return [name for item in value for name in parameter_references(item)]
    name = parameter_reference(value)
    return [name] if name is not None else []


def _session_names(spec: JsonValue) -> JsonValue:
    """``:session$userLogin`` is the reference's other name of ``:session$username``;
    any other session name is a mistake."""
    if isinstance(spec, list):
        return [_session_names(item) for item in spec]
    if isinstance(spec, dict):
        return {key: _session_names(value) for key, value in spec.items()}
    if isinstance(spec, str) and spec.startswith(":session$"):
        name = spec[len(":session$"):]
        if name not in SESSION_PARAMETERS:
            raise QueryConfigError(f"unknown session parameter {spec}; use :session$username "
                                   f"or :session$userId")
        return ":session$" + SESSION_PARAMETERS[name]
    return spec
