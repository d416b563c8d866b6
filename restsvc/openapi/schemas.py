"""Component schemas shared by both documents: errors, OAuth answers,
filters, fetch plans, metadata, messages and session shapes.

Every schema describes what the API really writes (and accepts), so a
client generated from the documents works and a fuzzer finds nothing.
"""
import copy
from collections.abc import Collection, Iterable

import peewee

from ..data.read.filters import MAX_CONDITIONS, MAX_DEPTH, OPERATORS_BY_KIND
from ..jsonio import JsonObject, JsonValue
from ..model.datatypes import DATATYPES
from ..model.metadata import MetaClass, MetaEnum
from ..model.valuetypes import EnumType

OPERATORS = sorted(set().union(*OPERATORS_BY_KIND.values()))


def ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: JsonObject) -> JsonObject:
    """The schema or JSON null (a value the API omits unless ``returnNulls``)."""
    if "$ref" in schema or ("enum" in schema and "title" in schema):    # a named one
        return {"anyOf": [schema, {"type": "null"}]}
    kinds = schema.get("type")
    if isinstance(kinds, str):
        widened = {**schema, "type": [kinds, "null"]}
        if "enum" in schema:
            widened["enum"] = [*schema["enum"], None]
        return widened
    return {"anyOf": [schema, {"type": "null"}]}


def enum_schema_name(name: str) -> str:
    """The one named schema of an enum (``enum_OrderStatus``)."""
    return f"enum_{name}"


def enum_schema(meta_enum: MetaEnum) -> JsonObject:
    """An application's enum: its constant names (model/valuetypes.py, their one home)."""
    return EnumType(meta_enum).json_schema()


def named_enum(title: str, values: Iterable[JsonValue], kind: str = "string") -> JsonObject:
    """One of restsvc's own enums; ``title`` is the name of its one schema
    (enums.py puts it in the components and refers to it where it is used)."""
    return {"type": kind, "title": title, "enum": list(values)}


def reference_schema_name(entity_name: str) -> str:
    """The one named schema of a reference to an entity in a body (``entityRef_Customer``)."""
    return f"entityRef_{entity_name}"


def reference_schema(entity_name: str, id_schema: JsonObject) -> JsonObject:
    return {"type": "object", "title": f"{entity_name} reference",
            "description": f"A {entity_name} by its id", "properties": {"id": id_schema},
            "required": ["id"]}


def binary(media_type: str | None = None) -> JsonObject:
    """Bytes: a file, a report document (``format: binary`` for generators that
    read OpenAPI 3.0 terms, ``contentMediaType`` for 3.1 ones)."""
    schema: JsonObject = {"type": "string", "format": "binary"}
    if media_type:
        schema["contentMediaType"] = media_type
    return schema


def json_text(schema: JsonObject, description: str | None = None) -> JsonObject:
    """A JSON text carried in a string (a query parameter): the schema of what it holds."""
    text: JsonObject = {"type": "string", "contentMediaType": "application/json",
                        "contentSchema": schema}
    if description:
        text["description"] = description
    return text


def array(items: JsonObject) -> JsonObject:
    return {"type": "array", "items": items}


def string_map(description: str) -> JsonObject:
    return {"type": "object", "additionalProperties": {"type": "string"},
            "description": description}


def _object(properties: JsonObject, required: Collection[str] = (),
            description: str | None = None, closed: bool = False) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if description:
        schema["description"] = description
    if closed:
        schema["additionalProperties"] = False
    return schema


STRING: JsonObject = {"type": "string"}
TOKEN_TYPE = named_enum("tokenType", ["Bearer"])
PERMISSION = named_enum("permission", [0, 1], "integer")      # 1: granted
INTEGER: JsonObject = {"type": "integer"}
BOOLEAN: JsonObject = {"type": "boolean"}

_FILTER_VALUE: JsonObject = {
    "description": "A value of the property's datatype in its JSON form (an enum constant name, "
                   "an id or {\"id\": ...} for references); an array for in/notIn; an optional "
                   "boolean for isNull/notEmpty."}

_COMMON: dict[str, JsonObject] = {
    "error": _object({"error": STRING, "details": STRING}, ("error", "details"),
                     "An error: a short message and details."),
    "validationError": _object(
        {"message": STRING, "messageTemplate": STRING, "path": STRING, "invalidValue": {}},
        ("message", "messageTemplate", "path"), "One failed validation of an attribute."),
    "validationErrors": {**array(ref("validationError")),
                         "description": "Validation failures (400), one per attribute."},
    "authError": _object({"error": STRING, "error_description": STRING},
                         ("error", "error_description"),
                         "A missing, invalid, expired or revoked bearer token (RFC 6750)."),
    "oauthError": _object({"error": named_enum("oauthErrorCode", [
        "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
        "unsupported_grant_type", "invalid_scope", "temporarily_unavailable"]),
        "error_description": STRING}, ("error",), "An OAuth 2 error (RFC 6749 section 5.2)."),
    "tokenResponse": _object({
        "access_token": STRING, "refresh_token": STRING,
        "token_type": TOKEN_TYPE,
        "expires_in": {"type": "integer", "minimum": 0}},
        ("access_token", "token_type", "expires_in"), "An access token (RFC 6749 section 5.1)."),
    "introspection": _object({
        "active": BOOLEAN, "client_id": STRING, "username": STRING, "sub": STRING,
        "token_type": TOKEN_TYPE, "iat": INTEGER, "exp": INTEGER},
        ("active",), "Token introspection (RFC 7662); only active is present for an inactive token."),
    "entity": {
        "type": "object", "description": "An entity as the API writes it; the other keys are "
                                         "its attributes along the fetch plan.",
        "properties": {"_entityName": STRING, "_instanceName": nullable(STRING), "id": STRING},
        "required": ["_entityName", "id"]},
    "entityInput": {"type": "object",
                    "description": "Attribute values by name; references as {\"id\": ...}, "
                                   "compositions as arrays of child objects."},
    "entityRef": {**reference_schema("entity", STRING), "title": "Entity reference",
                  "description": "An entity by its id"},
    "entityIds": {**array({"anyOf": [STRING, ref("entityRef")]}),
                  "description": "Ids, or objects with an id."},
    "condition": _object({
        "property": {"type": "string", "description": "An attribute, dotted through to-one references"},
        "operator": named_enum("filterOperator", OPERATORS),
        "value": _FILTER_VALUE}, ("property", "operator")),
    # No maxItems inside a group: the limit is on all conditions of a filter
    # together, and a bound in this recursive place lets a fuzzer build a
    # group of 501 groups of 501 groups... (schemathesis' negative arrays).
    "conditionGroup": _object({
        "group": {"type": "string", "pattern": "^([Aa][Nn][Dd]|[Oo][Rr])$", "description": "AND or OR"},
        "conditions": array({"anyOf": [ref("condition"), ref("conditionGroup")]})},
        ("group", "conditions"),
        f"A group of conditions; they count toward the filter's {MAX_CONDITIONS}."),
    "filter": _object({"conditions": {**array({"anyOf": [ref("condition"), ref("conditionGroup")]}),
                                      "maxItems": MAX_CONDITIONS}},
                      description=f"A search filter: conditions and groups (AND, OR), nested at "
                                  f"most {MAX_DEPTH} levels deep, at most {MAX_CONDITIONS} "
                                  f"conditions in all; all conditions must hold."),
    "fetchPlan": _object({
        "name": STRING, "entity": STRING, "extends": STRING,
        "properties": array({"anyOf": [STRING, _object(
            {"name": STRING, "fetchPlan": {"anyOf": [STRING, ref("fetchPlan")]}}, ("name",))]})},
        description="A fetch plan: attribute names, and references with their nested plans."),
    "entityMetadata": _object({
        "entityName": STRING, "ancestor": nullable(STRING),
        "properties": array(ref("propertyMetadata"))}, ("entityName", "ancestor", "properties")),
    "propertyMetadata": _object({
        "name": STRING,
        "attributeType": named_enum("attributeType", ["DATATYPE", "ENUM", "ASSOCIATION",
                                                      "COMPOSITION", "EMBEDDED"]),
        "type": STRING,
        "cardinality": named_enum("cardinality", ["NONE", "MANY_TO_ONE", "ONE_TO_MANY",
                                                  "ONE_TO_ONE", "MANY_TO_MANY"]),
        "mandatory": BOOLEAN, "readOnly": BOOLEAN, "description": STRING,
        "persistent": BOOLEAN, "transient": BOOLEAN},
        ("name", "attributeType", "type", "cardinality", "mandatory", "readOnly", "description",
         "persistent", "transient")),
    "enumMetadata": _object({"name": STRING, "values": array(_object(
        {"name": STRING, "id": STRING, "caption": STRING}, ("name", "id", "caption")))},
        ("name", "values")),
    "datatype": _object({"id": STRING, "name": STRING, "format": STRING,
                         "decimalSeparator": STRING, "groupingSeparator": STRING}, ("id", "name")),
    "capabilities": _object({"inlineFetchPlans": BOOLEAN}, ("inlineFetchPlans",)),
    "version": _object({"restsvc": STRING, "application": {
        "type": ["string", "null"], "description": "The version the application declares, "
                                                   "or null"}}, ("restsvc", "application")),
    "userSession": _object({"username": STRING, "locale": STRING}, ("username", "locale")),
    "localeInput": _object({"locale": STRING}, ("locale",)),
    "messages": string_map("Captions by key: Entity, Entity.attribute, enum class, enum.CONSTANT."),
    "userInfo": _object({"username": STRING, "locale": STRING,
                         "attributes": {"type": "object",
                                        "description": "The user's attributes; empty for a client."}},
                        ("username", "locale", "attributes")),
    "permissions": _object({
        "entities": array(_object({"target": STRING, "value": PERMISSION},
                                  ("target", "value"))),
        "entityAttributes": array(_object({"target": STRING,
                                           "value": named_enum("attributePermission",
                                                               [0, 1, 2], "integer")},
                                          ("target", "value"))),
        "specifics": array(_object({"target": STRING, "value": PERMISSION},
                                   ("target", "value"))),
        "authorities": array(STRING)}, ("entities", "entityAttributes", "specifics", "authorities")),
    "fileInfo": _object({"fileRef": STRING, "name": STRING, "size": {"type": "integer", "minimum": 0}},
                        ("fileRef", "name", "size")),
    "queryDescriptor": _object({
        "name": STRING, "entityName": STRING, "viewName": STRING, "fetchPlanName": STRING,
        "limit": nullable(INTEGER), "offset": nullable(INTEGER),
        "params": array(_object({"name": STRING, "type": STRING}, ("name", "type")))},
        ("name", "entityName", "fetchPlanName", "params")),
    "openapiDocument": {"type": "object", "description": "An OpenAPI 3.1 document."},
}


def common_schemas() -> dict[str, JsonObject]:
    """Fresh copies: a document may add to its own components."""
    return copy.deepcopy(_COMMON)


def id_schema(meta: MetaClass) -> JsonObject:
    """An entity's id as JSON writes it (always a string, as the reference
    writes ids): a UUID, an integer the database assigns, or the application's
    own key."""
    if meta.id_kind == "integer":
        return {"type": "string", "pattern": "^-?[0-9]{1,19}$",
                "description": "An integer id the database assigns, written as text"}
    if meta.id_kind == "string":
        return {"type": "string", "minLength": 1, "maxLength": _key_length(meta)}
    return datatype_schema(meta.properties["id"].value_datatype.name)


def _key_length(meta: MetaClass) -> int:
    """The most characters of an application's own key (its CharField primary key)."""
    model = meta.model
    assert issubclass(model, peewee.Model), f"{meta.name}: not a Peewee model"
    key = model._meta.primary_key
    assert isinstance(key, peewee.CharField), f"{meta.name}: its key is not a CharField"
    return key.max_length or 255


def datatype_schema(name: str) -> JsonObject:
    """A datatype's JSON Schema, from its one home (model/datatypes.py)."""
    return dict(DATATYPES[name].json_schema)
