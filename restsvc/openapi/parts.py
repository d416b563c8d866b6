"""Small builders of OpenAPI parts: parameters, bodies, responses, operations."""
from collections.abc import Iterable

from ..jsonio import JsonObject
from ..model.tenancy import TENANT_KEY_LENGTH
from ..security.tenants import KEY_PATTERN
from .schemas import BOOLEAN, STRING, json_text, ref

JSON = "application/json"
ERROR = ref("error")

# Reusable answers (components.responses); an operation lists those it can give.
RESPONSES: dict[str, tuple[str, JsonObject | None]] = {
    "BadRequest": ("Invalid input: a parameter, a fetch plan, a filter or the body", ERROR),
    "BadRequestOrInvalid": ("Invalid input; failed validations come as an array",
                            {"anyOf": [ERROR, ref("validationErrors")]}),
    "Unauthorized": ("No valid bearer token", ref("authError")),
    "Forbidden": ("The caller's roles do not allow this", ERROR),
    "NotFound": ("Not found (or not visible to the caller)", ERROR),
    "Conflict": ("Other entities still refer to this one", ERROR),
    "PayloadTooLarge": ("The request body (or the number of entities in it) is larger than "
                        "the service accepts", ERROR),
    "ServiceUnavailable": ("The database is busy or cannot be reached; try again later", ERROR),
    # Answered before the service sees the request: a request line longer
    # than 8,190 bytes (requestline.py); every GET documents it.
    "UriTooLong": ("The request line (method, path and query string) is longer than the "
                   "server accepts, 8,190 bytes; send long parameters in the body of the "
                   "POST form", ERROR),
}


def response_components() -> dict[str, JsonObject]:
    out: dict[str, JsonObject] = {}
    for name, (description, schema) in RESPONSES.items():
        body: JsonObject = {"description": description}
        if schema is not None:
            body["content"] = {JSON: {"schema": schema}}
        if name == "Unauthorized":
            body["headers"] = {"WWW-Authenticate": {
                "description": 'Bearer realm="...", error="invalid_token", error_description="..."',
                "schema": STRING, "required": True}}
        elif name == "ServiceUnavailable":
            body["headers"] = {"Retry-After": {"description": "Seconds to wait",
                                               "schema": {"type": "integer"}, "required": True}}
        out[name] = body
    return out


_STATUS_OF = {"BadRequest": "400", "BadRequestOrInvalid": "400", "Unauthorized": "401",
              "Forbidden": "403", "NotFound": "404", "Conflict": "409", "PayloadTooLarge": "413",
              "UriTooLong": "414", "ServiceUnavailable": "503"}


def failures(*names: str) -> dict[str, JsonObject]:
    return {_STATUS_OF[name]: {"$ref": f"#/components/responses/{name}"} for name in names}


def ok(description: str, schema: JsonObject | None = None, status: str = "200",
       headers: JsonObject | None = None, media: str = JSON) -> dict[str, JsonObject]:
    response: JsonObject = {"description": description}
    if schema is not None:
        response["content"] = {media: {"schema": schema}}
    if headers:
        response["headers"] = headers
    return {status: response}


def header(description: str, schema: JsonObject = STRING, required: bool = True) -> JsonObject:
    return {"description": description, "schema": schema, "required": required}


def query(name: str, schema: JsonObject, description: str, required: bool = False) -> JsonObject:
    param: JsonObject = {"name": name, "in": "query", "schema": schema, "description": description}
    if required:
        param["required"] = True
    elif schema.get("type") in ("boolean", "integer"):
        # ``limit=`` or ``returnCount=``: an empty value is the same as none (the default).
        param["allowEmptyValue"] = True
    return param


def json_query(name: str, schema: JsonObject, description: str,
               required: bool = False) -> JsonObject:
    """A query parameter whose value is a JSON text (URL-encoded): a string
    whose ``contentSchema`` says what it holds (generators keep a parameter
    declared with ``schema``; several drop one declared with ``content``)."""
    param: JsonObject = {"name": name, "in": "query", "description": description,
             "schema": json_text(schema)}
    if required:
        param["required"] = True
    return param


def flag(name: str, description: str) -> JsonObject:
    return query(name, BOOLEAN, description)


def json_body(schema: JsonObject, description: str | None = None,
              required: bool = True) -> JsonObject:
    body: JsonObject = {"required": required, "content": {JSON: {"schema": schema}}}
    if description:
        body["description"] = description
    return body


def operation(summary: str, tag: str, responses: dict[str, JsonObject],
              parameters: Iterable[JsonObject] = (), body: JsonObject | None = None,
              description: str | None = None) -> JsonObject:
    op: JsonObject = {"tags": [tag], "summary": summary}
    if description:
        op["description"] = description
    if parameters:
        op["parameters"] = list(parameters)
    if body is not None:
        op["requestBody"] = body
    op["responses"] = dict(sorted(responses.items()))
    return op


# security/tenants.py: a global caller with the tenants.actFor grant acts for one tenant.
TENANT_HEADER_PARAMETER: JsonObject = {
    "name": "X-Tenant-Id", "in": "header", "required": False,
    "schema": {**STRING, "pattern": f"^{KEY_PATTERN}$", "maxLength": TENANT_KEY_LENGTH},
    "description": "a global caller acts for this tenant (its key), with the tenants.actFor "
                   "grant; a tenant's caller may name only its own (restsvc/docs/tenants.md)"}


def with_tenant_header(op: JsonObject, responses: dict[str, JsonObject]) -> None:
    """The ``X-Tenant-Id`` header of an operation, and its 400 (a header that
    names no enabled tenant) when the operation documents none."""
    op["parameters"] = op.get("parameters", []) + [TENANT_HEADER_PARAMETER]
    responses.setdefault("400", failures("BadRequest")["400"])

