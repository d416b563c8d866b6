"""The batch operation (``POST /rest/batch``, restsvc/api/batch.py)."""
from ..jsonio import JsonObject
from .parts import failures, json_body, ok, operation
from .schemas import INTEGER, named_enum, ref

ENTITIES = "Entities"
_OPERATION = {
    "type": "object", "required": ["method", "path"], "additionalProperties": False,
    "properties": {
        "method": named_enum("batchMethod", ["POST", "PUT", "DELETE"]),
        "path": {"type": "string", "pattern": "^/", "maxLength": 2048,
                 "description": "The request's path and query, as sent alone: "
                                "/rest/entities/Customer/${0.id}?responseFetchPlan=_local"},
        "body": {"description": "The request's JSON body, if it has one; ${<index>.id} in a "
                                "string is the id an earlier operation answered"}}}
_RESULT = {"type": "object", "required": ["status", "body"], "properties": {
    "status": INTEGER, "body": {"description": "The answer's JSON (null when empty)"}}}
_FAILED = {"type": "object", "required": ["error", "details", "index", "operation"],
           "properties": {"error": {"type": "string"}, "details": {"type": "string"},
                          "index": {"type": "integer", "minimum": 0,
                                    "description": "The 0-based index of the failed operation"},
                          "operation": {"description": "Its error, as it alone would get it"}}}
_DESCRIPTION = (
    "Creates, updates, deletes, changes by filter and service calls (POST) run in order in "
    "one transaction with the caller's token and permissions: all or nothing. The first "
    "failure answers its own status (4xx) with its index and error; nothing is kept. A later "
    "operation refers to an id an earlier one answered with ${<index>.id}. Each operation "
    "counts for quotas and metrics as the request alone would. Safe to retry with "
    "Idempotency-Key.")


def run_batch() -> JsonObject:
    statuses = {str(status): {"description": "The failed operation's status",
                              "content": {"application/json": {"schema": _FAILED}}}
                for status in (403, 404, 405, 409, 412, 422, 429)}
    statuses["400"] = {"description": "A malformed batch, or the failed operation's 400",
                       "content": {"application/json": {"schema": {
                           "anyOf": [ref("error"), _FAILED]}}}}
    described: JsonObject = operation("Run several writes in one transaction", ENTITIES, {
        **ok("Every operation's answer, in order",
             {"type": "object", "required": ["results"],
              "properties": {"results": {"type": "array", "items": _RESULT}}}),
        **statuses, **failures("PayloadTooLarge")},
        body=json_body({"type": "object", "required": ["operations"],
                        "properties": {"operations": {"type": "array", "minItems": 1,
                                                      "items": _OPERATION}}},
                       "At most svc.rest.max-batch-operations operations (100 by default)"),
        description=_DESCRIPTION)
    return described
