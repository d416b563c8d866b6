"""The OpenAPI 3.1 description of the Reports API (``/rest/reports/docs/openapi.json``).

``reports_openapi()`` returns the document as a dict; the project-wide
OpenAPI generator can include its paths and schemas as they are.
"""
from ..jsonio import JsonObject
from .definitions import OUTPUT_TYPES, PARAMETER_TYPES
from .runner import CONTENT_TYPES

BASE = "/rest/reports"
OCTET_STREAM = "application/octet-stream"


def _error(description: str) -> JsonObject:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/error"}}}}


def _json(schema_ref: JsonObject, description: str = "OK") -> JsonObject:
    return {"description": description,
            "content": {"application/json": {"schema": schema_ref}}}


_ID: JsonObject = {"type": "string", "format": "uuid"}
_FORBIDDEN = _error("the caller lacks the specific policy reports.rest.enabled")
_UNAUTHORIZED: JsonObject = {"description": "no valid bearer token"}

# Each enum is one named schema (as in the project documents: openapi/enums.py).
ENUMS: dict[str, list[str]] = {"reportOutputType": list(OUTPUT_TYPES), "reportParameterType": list(PARAMETER_TYPES),
         "documentFormat": ["json", "yaml"]}


def _named(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


SCHEMAS: JsonObject = {
    **{name: {"type": "string", "title": name, "enum": values} for name, values in ENUMS.items()},
    "error": {"type": "object", "required": ["error", "details"],
              "properties": {"error": {"type": "string"}, "details": {"type": "string"}}},
    "reportBrief": {
        "type": "object", "required": ["id", "name", "group"],
        "properties": {"id": _ID, "name": {"type": "string"},
                       "code": {"type": "string", "description": "present only when the report has one"},
                       "group": _ID}},
    "reportTemplate": {
        "type": "object", "required": ["code", "outputType", "default"],
        "properties": {"code": {"type": "string"},
                       "outputType": _named("reportOutputType"),
                       "default": {"type": "boolean"}}},
    "inputParameter": {
        "type": "object", "required": ["name", "alias", "type", "required", "hidden"],
        "properties": {"name": {"type": "string", "description": "caption"},
                       "alias": {"type": "string", "description": "the name a run body uses"},
                       "type": _named("reportParameterType"),
                       "required": {"type": "boolean"}, "hidden": {"type": "boolean"},
                       "entityMetaClass": {"type": "string"},
                       "enumerationClass": {"type": "string"},
                       "defaultValue": {"type": "string"}}},
    "reportDetail": {
        "allOf": [{"$ref": "#/components/schemas/reportBrief"}, {
            "type": "object", "required": ["templates", "inputParameters"],
            "properties": {
                "templates": {"type": "array", "items": {"$ref": "#/components/schemas/reportTemplate"}},
                "inputParameters": {"type": "array",
                                    "items": {"$ref": "#/components/schemas/inputParameter"}}}}]},
    "reportGroup": {
        "type": "object", "required": ["id", "title"],
        "properties": {"id": _ID, "title": {"type": "string"}, "code": {"type": "string"}}},
    "runBody": {
        "type": "object",
        "properties": {
            "template": {"type": "string", "description": "template code; the default one when omitted"},
            "attachment": {"type": "boolean", "default": False,
                           "description": "Content-Disposition attachment instead of inline"},
            "parameters": {"type": "array", "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "description": "the parameter's alias"},
                               "value": {"type": "string"},
                               "values": {"type": "array", "items": {"type": "string"},
                                          "description": "ENTITY_LIST ids"}}}}}},
}


def reports_openapi(server_url: str = BASE) -> JsonObject:
    """The document as a dict, with ``servers`` pointing at ``server_url``."""
    def path_id(name: str, description: str) -> JsonObject:
        return {"name": name, "in": "path", "required": True, "description": description,
                "schema": _ID}

    get: JsonObject = {"security": [{"bearer": []}], "tags": ["Reports"]}
    # The answer's type is the template's. Generated clients read an answer by
    # the first media type they know, and know bytes only as octet-stream: it
    # comes first, so they keep an XLSX as bytes instead of decoding it as text.
    documents: JsonObject = {t: {"schema": {"type": "string", "format": "binary",
                                **({"contentMediaType": t} if t != OCTET_STREAM else {})}}
                 for t in (OCTET_STREAM, *(CONTENT_TYPES[t] for t in OUTPUT_TYPES))}
    return {
        "openapi": "3.1.0",
        "info": {"title": "restsvc Reports API", "version": "1.0",
                 "description": "Lists, describes and runs the reports available through REST."},
        "servers": [{"url": server_url}],
        "tags": [{"name": "Reports", "description": "Reports available through REST"}],
        "paths": {
            "/report": {"get": {**get, "operationId": "listReports", "summary": "Reports the caller may run",
                                "responses": {
                                    "200": _json({"type": "array",
                                                  "items": {"$ref": "#/components/schemas/reportBrief"}}),
                                    "401": _UNAUTHORIZED, "403": _FORBIDDEN}}},
            "/report/{id}": {"get": {
                **get, "operationId": "getReport", "summary": "A report with its templates and parameters",
                "parameters": [path_id("id", "report id")],
                "responses": {"200": _json({"$ref": "#/components/schemas/reportDetail"}),
                              "401": _UNAUTHORIZED, "403": _FORBIDDEN,
                              "404": _error("no such report, or the caller may not run it")}}},
            "/group/{groupId}": {"get": {
                **get, "operationId": "getReportGroup", "summary": "A report group",
                "parameters": [path_id("groupId", "group id")],
                "responses": {"200": _json({"$ref": "#/components/schemas/reportGroup"}),
                              "401": _UNAUTHORIZED, "403": _FORBIDDEN,
                              "404": _error("no such group among the caller's reports")}}},
            "/run/{id}": {"post": {
                **get, "operationId": "runReport", "summary": "Run a report; the answer is the document",
                "parameters": [path_id("id", "report id")],
                "requestBody": {"required": False, "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/runBody"}}}},
                "responses": {
                    "200": {"description": "the document, in its template's type (text/csv or the XLSX "
                                          "type): bytes", "content": documents,
                            "headers": {"Content-Disposition": {"schema": {"type": "string"}}}},
                    "400": _error("Invalid JSON body, Template not found, Invalid entity ID, "
                                  "Run report error (missing or malformed parameter)"),
                    "401": _UNAUTHORIZED,
                    "403": _error("no reports.rest.enabled, or an entity the report reads is forbidden"),
                    "404": _error("no such report, or an ENTITY parameter's row does not exist")}}},
            "/docs/openapi.{format}": {"get": {
                **get, "operationId": "reportsOpenApi", "summary": "This description",
                "parameters": [{"name": "format", "in": "path", "required": True,
                                "schema": _named("documentFormat")}],
                "responses": {"200": {"description": "OpenAPI 3.1", "content": {
                    "application/json": {"schema": {"type": "object"}},
                    "application/yaml": {"schema": {"type": "object"}}}},
                    "404": _error("no such format (json or yaml)")}}},
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
