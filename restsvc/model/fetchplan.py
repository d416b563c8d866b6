"""Fetch plans: which attributes to load and serialize, references nested.

Built-ins per entity (reference 1.6): ``_local`` (persistent single-valued
non-reference attributes, with id and version), ``_instance_name`` (the
instance-name attributes) and ``_base`` (``_local`` plus the references the
instance name uses). Named plans are declared on the entity in the same JSON
form clients send inline:

    {"name": "order-with-details", "extends": "_local",
     "properties": ["itemCount",
                    {"name": "customer", "fetchPlan": "_base"},
                    {"name": "lines", "fetchPlan": {"properties": ["quantity", ...]}}]}

A nested ``fetchPlan`` is a plan name, or an object with ``properties`` (and
optionally ``extends``), or an object with only ``name``.
"""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ..errors import BadRequest
from ..jsonio import loads

if TYPE_CHECKING:
    from .metadata import MetaClass

BUILT_IN = ("_local", "_base", "_instance_name")
MAX_DEPTH = 8       # declared plans; a request's plans: svc.rest.max-fetch-plan-depth


class FetchPlanError(ValueError):
    """A plan that cannot be built; the message is for the client or the log."""


class FetchPlanTooDeep(FetchPlanError):
    """A plan nested deeper than allowed (each level can multiply the answer)."""


@dataclass(eq=False)
class FetchPlan:
    name: str | None            # None: an inline plan's, or a nested one
    entity: "MetaClass"
    properties: dict[str, Optional["FetchPlan"]]   # attribute -> nested plan, or None for values

    def to_json(self, top: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.name:
            body["name"] = self.name
        if top:
            body["entity"] = self.entity.name
        items: list[Any] = []
        for name, nested in self.properties.items():
            if nested is None:
                items.append(name)
            else:
                items.append({"name": name, "fetchPlan": nested.to_json(top=False)})
        body["properties"] = items
        return body


def _local(meta: "MetaClass") -> dict[str, Optional[FetchPlan]]:
    return {name: None for name, prop in meta.properties.items()
            if prop.persistent and not prop.is_reference and not prop.is_collection
            and not prop.is_embedded}


def build_built_in_plans(meta: "MetaClass") -> None:
    meta.fetch_plans["_local"] = FetchPlan("_local", meta, _local(meta))
    meta.fetch_plans["_instance_name"] = _instance_name_plan(meta, set())
    meta.fetch_plans["_base"] = _base_plan(meta, set())


def build_named_plans(meta: "MetaClass", declared: Iterable[Any]) -> None:
    """Add the declared plans; every entity's built-ins must exist already."""
    for spec in declared:
        name = spec.get("name") if isinstance(spec, dict) else None
        if not name or name.startswith("_") or name in meta.fetch_plans:
            raise FetchPlanError(f"{meta.name}: fetch plan needs a new name not starting with _")
        try:
            meta.fetch_plans[name] = parse_plan(meta, spec, strict=True)
        except FetchPlanError as exc:
            raise FetchPlanError(f"{meta.name}: fetch plan {name}: {exc}") from None


def _instance_name_plan(meta: "MetaClass", seen: set["MetaClass"]) -> FetchPlan:
    properties: dict[str, FetchPlan | None] = {}
    for name in meta.instance_name:
        prop = meta.properties[name]
        if prop.is_reference and prop.target not in seen:
            properties[name] = _instance_name_plan(prop.related, seen | {meta})
        elif not prop.is_reference:
            properties[name] = None
    return FetchPlan("_instance_name", meta, properties)


def _base_plan(meta: "MetaClass", seen: set["MetaClass"]) -> FetchPlan:
    properties = _local(meta)
    for name, prop in meta.properties.items():      # embedded values with their _base
        if prop.is_embedded:
            properties[name] = prop.related.fetch_plans["_base"]
    for name in meta.instance_name:
        prop = meta.properties[name]
        if prop.is_reference and prop.target not in seen:
            properties[name] = _base_plan(prop.related, seen | {meta})
    return FetchPlan("_base", meta, properties)


def ids_only(meta: "MetaClass") -> FetchPlan:
    return FetchPlan(None, meta, {"id": None})


def named_plan(meta: "MetaClass", name: str) -> FetchPlan | None:
    return meta.fetch_plans.get(name)


def parse_plan(meta: "MetaClass", spec: Any, strict: bool = False, depth: int = 0,
               max_depth: int = MAX_DEPTH) -> FetchPlan:
    """A FetchPlan from its JSON form. ``strict`` refuses unknown attributes
    (declarations); clients' inline plans skip them, as the reference does.
    A reference's plan is one level deeper, and so is an object in ``extends``;
    more than ``max_depth`` levels are refused."""
    if depth > max_depth:
        raise FetchPlanTooDeep(f"The fetch plan is nested deeper than {max_depth} levels "
                               "(svc.rest.max-fetch-plan-depth)")
    if isinstance(spec, str):
        plan = named_plan(meta, spec)
        if plan is None:
            raise FetchPlanError(f"Fetch plan {spec} for entity {meta.name} not found")
        return plan
    if not isinstance(spec, dict):
        raise FetchPlanError("a fetch plan must be a name or a JSON object")
    if "properties" not in spec and "extends" not in spec:
        return parse_plan(meta, spec.get("name") or "_base", strict, depth, max_depth)
    properties: dict[str, FetchPlan | None] = {} if meta.is_embedded else {"id": None}
    base = spec.get("extends")
    if base is not None:
        deeper = depth if isinstance(base, str) else depth + 1
        properties.update(parse_plan(meta, base, strict, deeper, max_depth).properties)
    items = spec.get("properties") or []
    if not isinstance(items, list):
        raise FetchPlanError("properties of a fetch plan must be an array")
    for item in items:
        if isinstance(item, str):
            name, nested_spec = item, None
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            name, nested_spec = item["name"], item.get("fetchPlan", item.get("view"))
        else:
            raise FetchPlanError("a fetch plan property is a name or an object with a name")
        prop = meta.properties.get(name)
        if prop is None:
            if strict:
                raise FetchPlanError(f"unknown attribute {name}")
            continue
        if prop.is_reference:
            properties[name] = parse_plan(
                prop.related, "_instance_name" if nested_spec is None else nested_spec,
                strict, depth + 1, max_depth)
        elif prop.is_embedded:
            properties[name] = parse_plan(prop.related, "_base" if nested_spec is None
                                          else nested_spec, strict, depth + 1, max_depth)
        else:
            properties[name] = None
    return FetchPlan(spec.get("name") if depth == 0 else None, meta, properties)


def _inline_disabled() -> BadRequest:
    return BadRequest("Inline fetch plans are disabled",
                      "Inline fetch plans are disabled. Use only named fetch plans.")


def resolve_request_plan(meta: "MetaClass", value: Any, inline_enabled: bool,
                         default: str = "_base", max_depth: int = MAX_DEPTH) -> FetchPlan:
    """The plan a request names with ``fetchPlan``: a name or inline JSON."""
    if value is None or value == "":
        return meta.fetch_plans[default]
    if isinstance(value, str):
        text = value.strip()
        if not (text.startswith("{") and text.endswith("}")):
            plan = named_plan(meta, value)
            if plan is None:
                raise BadRequest("Fetch plan not found",
                                 f"Fetch plan {value} for entity {meta.name} not found")
            return plan
        if not inline_enabled:
            raise _inline_disabled()
        try:
            value = loads(text)
        except ValueError:
            raise BadRequest("Fetch plan not found", "The inline fetch plan is not valid JSON") from None
    elif not inline_enabled:        # an object in a search body is inline too
        raise _inline_disabled()
    try:
        return parse_plan(meta, value, max_depth=max_depth)
    except FetchPlanTooDeep as exc:
        raise BadRequest("Fetch plan too deep", str(exc)) from None
    except FetchPlanError as exc:
        raise BadRequest("Fetch plan not found", str(exc)) from None
