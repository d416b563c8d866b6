"""Operations of the Services API: generic, and one per exposed service
method in the detailed document, typed from the method's parameters and its
return hint (restsvc/services knows both)."""
import typing

from ..jsonio import JsonObject
from ..model.metadata import MetaClass, Metadata
from ..services.params import Param, list_item, optional_of
from ..services.registry import ServiceMethod
from .parts import JSON, failures, json_body, ok, operation
from .schemas import array, json_text, named_enum, ref

SERVICES = "Services"
TEXT = "text/plain"
_FAILURES = ("BadRequestOrInvalid", "Forbidden", "NotFound")


def service_descriptor() -> JsonObject:
    return {"type": "object", "required": ["name", "methods"], "properties": {
        "name": {"type": "string"},
        "methods": array({"type": "object", "required": ["name", "httpMethod", "params"],
                          "properties": {
                              "name": {"type": "string"},
                              "httpMethod": named_enum("httpMethod", ["GET", "POST"]),
                              "params": array({"type": "object", "required": ["name", "type", "required"],
                                               "properties": {"name": {"type": "string"},
                                                              "type": {"type": "string"},
                                                              "required": {"type": "boolean"}}})}})}}


def list_services() -> JsonObject:
    return operation("The services the caller may call", SERVICES,
                     ok("Service descriptors", array(ref("serviceDescriptor"))))


def describe_service() -> JsonObject:
    return operation("One service: the methods the caller may call", SERVICES, {
        **ok("The service descriptor", ref("serviceDescriptor")), **failures("NotFound")})


_ANY_RESULT: dict[str, JsonObject] = {**ok("The result: JSON, or a simple value as text", None),
               "204": {"description": "The method returned nothing"}}
_ANY_RESULT["200"]["content"] = {JSON: {"schema": {}}, TEXT: {"schema": {"type": "string"}}}


def invoke_get() -> JsonObject:
    return operation("Call a service method (parameters in the query string)", SERVICES, {
        **_ANY_RESULT, **failures(*_FAILURES),
        "405": {"description": "The method does not take GET"}},
        [{"name": "parameters", "in": "query", "style": "form", "explode": True,
          "schema": {"type": "object", "additionalProperties": {"type": "string"}},
          "description": "The method's parameters by name, in their text forms"}])


def invoke_post() -> JsonObject:
    return operation("Call a service method (parameters in a JSON object)", SERVICES, {
        **_ANY_RESULT, **failures(*_FAILURES, "PayloadTooLarge"),
        "405": {"description": "The method does not take POST"}},
        body=json_body({"type": "object", "description": "The method's parameters by name"},
                       required=False))


SERVICES_BASE = "/rest/services/<service_name>"
SERVICE_ENDPOINTS = {("GET", "/rest/services"): list_services,
                     ("GET", SERVICES_BASE): describe_service}
# Written once per exposed method in the detailed document.
SERVICE_OPERATIONS = {("GET", f"{SERVICES_BASE}/<method_name>"): invoke_get,
                      ("POST", f"{SERVICES_BASE}/<method_name>"): invoke_post}


# -- one exposed method ---------------------------------------------------------
def method_operation(metadata: Metadata, method: ServiceMethod, http_method: str) -> JsonObject:
    label = f"{method.service}.{method.name}"
    params = method.request_params
    answers = {**_result(metadata, method), **failures(*_FAILURES)}
    if http_method == "GET":
        return operation(f"Call {label}", method.service, answers,
                         [_query_param(metadata, p) for p in params])
    body: JsonObject = {"type": "object",
                        "properties": {p.name: _value_schema(metadata, p) for p in params}}
    required = [p.name for p in params if p.required]
    if required:
        body["required"] = required
    answers.update(failures("PayloadTooLarge"))
    return operation(f"Call {label}", method.service, answers,
                     body=json_body(body, required=bool(required)))


def _value_schema(metadata: Metadata, param: Param) -> JsonObject:
    if param.kind in ("entity", "entities"):
        entity = ref(f"entityInput_{_entity(param).name}")
        return entity if param.kind == "entity" else array(entity)
    return param.json_schema()


def _entity(param: Param) -> MetaClass:
    """The entity an entity (or entities) parameter takes."""
    meta = param.meta
    assert isinstance(meta, MetaClass), f"{param.name}: {meta!r} is not an entity"
    return meta


def _query_param(metadata: Metadata, param: Param) -> JsonObject:
    spec: JsonObject = {"name": param.name, "in": "query", "required": param.required}
    if param.kind in ("value", "array"):
        spec["schema"] = param.json_schema()
        if param.kind == "array":
            spec.update(style="form", explode=True)
    else:       # structured values in a query string: their JSON, URL-encoded
        spec["schema"] = json_text(_value_schema(metadata, param))
    return spec


def _result(metadata: Metadata, method: ServiceMethod) -> dict[str, JsonObject]:
    kind, schema = method.result
    if kind == "empty":
        return {"204": {"description": "Done; no body"}}
    if kind == "text":
        return ok("The result in its text form", {
            "type": "string", "description": f"{_in_words(schema or {})}, as text"}, media=TEXT)
    entity = _entity_result(metadata, method)
    return ok("The result", entity if entity is not None else schema)


_WORDS = {"string": "A text", "integer": "A whole number", "number": "A number",
          "boolean": "true or false"}
_FORMATS = {"date": "A date (YYYY-MM-DD)", "date-time": "A date and time (ISO 8601)",
            "time": "A time of day (HH:MM:SS)", "uuid": "A UUID"}


def _in_words(schema: JsonObject) -> str:
    """A simple value's JSON Schema as a reader would say it."""
    if "enum" in schema:
        return "One of " + ", ".join(str(value) for value in schema["enum"])
    kind = schema.get("type", "")
    kind = next((k for k in kind if k != "null"), "") if isinstance(kind, list) else kind
    return _FORMATS.get(schema.get("format", "")) or _WORDS.get(kind, "A value")


def _entity_result(metadata: Metadata, method: ServiceMethod) -> JsonObject | None:
    """``$ref`` to the entity schema when the method returns an entity or a list of them."""
    hint = typing.get_type_hints(method.function).get("return")
    hint = optional_of(hint) or hint
    item = list_item(hint)
    target = item if item is not None else hint
    meta = metadata.of_model(target) if isinstance(target, type) else None
    if meta is None:
        return None
    entity = ref(f"entity_{meta.name}")
    return array(entity) if item is not None else entity
