"""The Reports API in the project documents, taken from its own document
(``restsvc/reports/openapi.py``), so that the two never disagree."""
from ..reports.openapi import SCHEMAS, reports_openapi

_DOCUMENT = reports_openapi()
# Route rule -> the path of the same operation in the reports document.
_PATHS = {
    "/rest/reports/report": "/report",
    "/rest/reports/report/<report_id>": "/report/{id}",
    "/rest/reports/group/<group_id>": "/group/{groupId}",
    "/rest/reports/run/<report_id>": "/run/{id}",
    "/rest/reports/docs/openapi.<any(json, yaml):extension>": "/docs/openapi.{format}",
}


def _operation(path, method):
    def build():
        op = dict(_DOCUMENT["paths"][path][method])
        # The project document adds path parameters, operation ids and security itself.
        for key in ("operationId", "security"):
            op.pop(key)
        op["parameters"] = [p for p in op.get("parameters", ()) if p["in"] != "path"]
        return op
    return build


REPORT_ENDPOINTS = {(method.upper(), rule): _operation(path, method)
                    for rule, path in _PATHS.items() for method in _DOCUMENT["paths"][path]}
REPORT_SCHEMAS = {name: schema for name, schema in SCHEMAS.items() if name != "error"}
