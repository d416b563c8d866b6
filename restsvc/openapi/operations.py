"""What each route of the route table does: one operation per (method, rule).

The route table (``app.url_map``) is the list of URLs; this table describes
the operation behind each of them. An entry takes a ``Typing`` (shapes.py):
the generic document passes the generic shapes, the detailed one those of
one entity or one query, so both documents describe every operation once.
401 and the ``rest.enabled`` 403 are added by the document from the gate.
"""
from collections.abc import Callable

from ..data.transfer.imports import MODES
from ..data.read.query import MAX_SORT_TERMS
from ..jsonio import JsonObject
from .parts import JSON, failures, flag, header, json_body, json_query, ok, operation, query
from .schemas import INTEGER, STRING, array, binary, named_enum, nullable, ref
from .shapes import TEXT_QUERY, Typing

ENTITIES, QUERIES, FILES = "Entities", "Queries", "Files"
AUTH, METADATA, MESSAGES, SESSION, DOCS = (
    "Authentication", "Metadata", "Messages", "User session", "Documentation")

E = "/rest/entities/<entity_name>"
Q = "/rest/queries/<entity_name>"

TOTAL: JsonObject = {
    "X-Total-Count": header("The total count of matching entities (with returnCount=true)",
                            INTEGER, required=False),
    "Link": header('<url>; rel="next": the next page (with limit, when more rows follow)',
                   required=False)}
ETAG: JsonObject = {
    "ETag": header('"<version>-<digest>": send it in If-None-Match (304) or If-Match '
                   "(PUT, DELETE: 412 when stale)", required=False)}


def _fetch_plan(t: Typing, name: str = "fetchPlan") -> JsonObject:
    return query(name, t.fetch_plan, "The fetch plan: " + t.fetch_plan_text)


def _page(t: Typing) -> list[JsonObject]:
    return [query("limit", {"type": "integer", "minimum": 0, "maximum": t.max_limit},
                  f"Page size, at most {t.max_limit}"),
            query("offset", {"type": "integer", "minimum": 0}, "Rows to skip"),
            query("after", STRING, 'The cursor from the Link rel="next" of the page before'),
            query("sort", STRING, "Comma-separated attributes, dotted through references; "
                                  f"- before one sorts descending: -date,customer.name; at most "
                                  f"{MAX_SORT_TERMS} terms"),
            flag("returnNulls", "Write null attributes (omitted by default)"),
            flag("returnCount", "Send the total count in X-Total-Count")]


def _entity_failures(t: Typing, *names: str) -> dict[str, JsonObject]:
    return failures(*names, *(("NotFound",) if t.unknown_entity else ()))


def list_entities(t: Typing) -> JsonObject:
    return operation(f"List {t.label}", t.tag, {
        **ok("A page of entities", array(t.entity), headers=TOTAL),
        **_entity_failures(t, "BadRequest", "Forbidden")},
        [_fetch_plan(t), *_page(t)])


def create_entities(t: Typing) -> JsonObject:
    return operation(f"Create {t.label}", t.tag, {
        **ok("The created entity (an array for an array body)",
             {"anyOf": [t.entity, array(t.entity)]}, "201",
             {"Location": header("The URL of the new entity (of the collection for an array)")}),
        **_entity_failures(t, "BadRequestOrInvalid", "Forbidden", "PayloadTooLarge")},
        [_fetch_plan(t, "responseFetchPlan"), flag("returnNulls", "Write null attributes")],
        json_body({"anyOf": [t.entity_create, array(t.entity_create)]},
                  "One entity, or an array created in one transaction (all or nothing); "
                  "compositions are created with their owner"))


def bulk_update(t: Typing) -> JsonObject:
    return operation(f"Update several {t.label}", t.tag, {
        **ok("The updated entities", array(t.entity)),
        **failures("BadRequestOrInvalid", "Forbidden", "NotFound", "PayloadTooLarge")},
        [_fetch_plan(t, "responseFetchPlan")],
        json_body(array(t.entity_update_with_id), "Entities with their ids; one transaction"))


def bulk_delete(t: Typing) -> JsonObject:
    return operation(f"Delete several {t.label}", t.tag, {
        **ok("Deleted", status="204"),
        **_entity_failures(t, "BadRequest", "Forbidden", "NotFound", "Conflict",
                           "PayloadTooLarge")},
        body=json_body(t.entity_ids, "Ids, or objects with an id; one transaction"))


def search_get(t: Typing) -> JsonObject:
    text = [query("q", TEXT_QUERY, TEXT_QUERY["description"]),
            flag("snippet", "With q: each hit's _snippet")] if t.searchable else []
    return operation(f"Search {t.label}", t.tag, {
        **ok("A page of matching entities", array(t.search_hit), headers=TOTAL),
        **_entity_failures(t, "BadRequest", "Forbidden")},
        [json_query("filter", ref("filter"), "The search filter as URL-encoded JSON"
                    + ("; required without q" if t.searchable else ""), not t.searchable),
         *text, _fetch_plan(t), *_page(t)])


def search_post(t: Typing) -> JsonObject:
    return operation(f"Search {t.label} (filter in the body)", t.tag, {
        **ok("A page of matching entities", array(t.search_hit), headers=TOTAL),
        **_entity_failures(t, "BadRequest", "Forbidden", "PayloadTooLarge")},
        body=json_body(t.search_body))


def count_get(t: Typing) -> JsonObject:
    return operation(f"Count matching {t.label}", t.tag, {
        **ok("The count", {"type": "integer", "minimum": 0}),
        **_entity_failures(t, "BadRequest", "Forbidden")},
        [json_query("filter", ref("filter"), "The search filter as URL-encoded JSON; "
                    "without one, every entity the caller may see is counted")])


def count_post(t: Typing) -> JsonObject:
    return operation(f"Count matching {t.label} (filter in the body)", t.tag, {
        **ok("The count", {"type": "integer", "minimum": 0}),
        **_entity_failures(t, "BadRequest", "Forbidden", "PayloadTooLarge")},
        body=json_body({"type": "object", "properties": {"filter": ref("filter")}},
                       "Without a filter (or without a body) every entity the caller may "
                       "see is counted", required=False))


_NAMES: JsonObject = {"type": "array", "items": STRING}
_AGGREGATES = ("countDistinct", "sum", "avg", "min", "max")
_AGGREGATE: JsonObject = {"type": "object", "properties": {
    "group": {"type": "object", "description": "The groupBy items and their values"},
    "count": INTEGER, **{name: {"type": "object"} for name in _AGGREGATES}}}
_AGGREGATE_TEXT = ("groupBy: attributes, to-one paths or year(date), month(date), day(date); "
                   "count; countDistinct, sum, avg, min, max: attributes; having: conditions "
                   "on count, sum.amount...; sort: -count,grade; limit: groups")


def aggregate_get(t: Typing) -> JsonObject:
    return operation(f"Aggregate {t.label}", t.tag, {
        **ok("One object per group", array(_AGGREGATE)),
        **_entity_failures(t, "BadRequest", "Forbidden")},
        [json_query("filter", ref("filter"), "The search filter as URL-encoded JSON"),
         query("groupBy", STRING, _AGGREGATE_TEXT), flag("count", "Count the rows of each group"),
         *[query(name, STRING, "Comma-separated attributes") for name in _AGGREGATES],
         json_query("having", {"type": "object"}, "Conditions on the aggregates"),
         query("sort", STRING, "Comma-separated result keys, - for descending"),
         query("limit", INTEGER, "At most this many groups")])


def aggregate_post(t: Typing) -> JsonObject:
    return operation(f"Aggregate {t.label} (request in the body)", t.tag, {
        **ok("One object per group", array(_AGGREGATE)),
        **_entity_failures(t, "BadRequest", "Forbidden", "PayloadTooLarge")},
        body=json_body({"type": "object", "properties": {
            "filter": ref("filter"), "groupBy": _NAMES, "count": {"type": "boolean"},
            **{name: _NAMES for name in _AGGREGATES}, "having": {"type": "object"},
            "sort": STRING, "limit": INTEGER}}, _AGGREGATE_TEXT))


def load_entity(t: Typing) -> JsonObject:
    return operation(f"Load one {t.one}", t.tag, {
        **ok("The entity", t.entity, headers=ETAG),
        **failures("BadRequest", "Forbidden", "NotFound")},
        [_fetch_plan(t), flag("returnNulls", "Write null attributes")])


def update_entity(t: Typing) -> JsonObject:
    return operation(f"Update one {t.one}", t.tag, {
        **ok("The updated entity", t.entity),
        **failures("BadRequestOrInvalid", "Forbidden", "NotFound", "PayloadTooLarge")},
        [_fetch_plan(t, "responseFetchPlan")],
        json_body(t.entity_update, "The attributes to change; a composition sent replaces "
                                   "the stored children"))


def delete_entity(t: Typing) -> JsonObject:
    return operation(f"Delete one {t.one}", t.tag, {
        **ok("Deleted", status="204"),
        **failures("BadRequest", "Forbidden", "NotFound", "Conflict")})


def entity_history(t: Typing) -> JsonObject:
    return operation(f"The history of one {t.one}, newest first", t.tag, {
        **ok("A page of HistoryItems (the entity log)", array({"type": "object"}), headers=TOTAL),
        **failures("BadRequest", "Forbidden", "NotFound")}, _page(t))


def restore_entity(t: Typing) -> JsonObject:
    return operation(f"Restore one soft-deleted {t.one} (and the children deleted with it)",
                     t.tag, {**ok("The restored entity", t.entity),
                             **failures("BadRequest", "Forbidden", "NotFound", "Conflict")})


def purge_entity(t: Typing) -> JsonObject:
    return operation(f"Remove one soft-deleted {t.one} for good", t.tag, {
        **ok("Purged", status="204"),
        **failures("BadRequest", "Forbidden", "NotFound", "Conflict")})


_IMPORT_REPORT: JsonObject = {"type": "object", "properties": {
    "created": INTEGER, "updated": INTEGER, "failed": INTEGER, "dryRun": {"type": "boolean"},
    "errors": array({"type": "object", "properties": {
        "line": INTEGER, "errors": ref("validationErrors")}}),
    "errorsTruncated": {"type": "boolean"}}}


def import_entities(t: Typing) -> JsonObject:
    return operation(f"Import {t.label} from CSV or NDJSON", t.tag, {
        **ok("What was written (with partial=true: and the bad rows, by line)", _IMPORT_REPORT),
        **_entity_failures(t, "BadRequest", "Forbidden", "PayloadTooLarge"),
        "415": {"description": "A body of another type than text/csv, application/x-ndjson "
                               "or application/octet-stream",
                "content": {JSON: {"schema": ref("error")}}}},
        [query("mode", named_enum("importMode", MODES),
               "create: new rows; upsert: update the row of the id, create the others; "
               "upsertByKey: the same by the entity's natural key"),
         query("format", named_enum("importFormat", ("csv", "ndjson")),
               "The rows' format for an application/octet-stream body (default csv); a "
               "text/csv or application/x-ndjson body says it itself"),
         flag("partial", "Keep the good rows and report the bad ones (default: all or none)"),
         flag("dryRun", "Check every row, write nothing")],
        {"required": True, "description": "CSV: a header row of attribute names (id, version, "
                                          "customer.id or customer.<naturalKey>, address.city, "
                                          "tags[0].id), one entity per row, text forms, empty "
                                          "cell = null. NDJSON: one entity's JSON per line. "
                                          "Sent as text/csv, application/x-ndjson, or "
                                          "application/octet-stream with format. "
                                          "At most svc.rest.import-max-size bytes.",
         # text/csv and application/x-ndjson bodies are taken too (the description
         # says so): generators drop an operation with a media type they do not know.
         "content": {"application/octet-stream": {"schema": binary()}}},
        description="All rows are written in one transaction through the same checks as "
                    "create and update; a refused import (400) lists each bad row's line "
                    "(the CSV header is line 1) and its errors, and writes nothing.")


def _query_options(t: Typing) -> list[JsonObject]:
    return [query("fetchPlan", t.query_fetch_plan, "A fetch plan name (default: the query's)"),
            *[p for p in _page(t) if p["name"] != "sort"]]


def run_query_get(t: Typing) -> JsonObject:
    return operation(f"Run {t.query_label}", t.query_tag, {
        **ok("A page of results", array(t.entity), headers=TOTAL),
        **failures("BadRequest", "Forbidden", *(("NotFound",) if t.unknown_query else ()))},
        [*t.query_parameters, *_query_options(t)])


def run_query_post(t: Typing) -> JsonObject:
    return operation(f"Run {t.query_label} (parameters in the body)", t.query_tag, {
        **ok("A page of results", array(t.entity), headers=TOTAL),
        **failures("BadRequest", "Forbidden", "PayloadTooLarge",
                   *(("NotFound",) if t.unknown_query else ()))},
        _query_options(t), json_body(t.query_body, required=t.query_body_required))


def _count_answer() -> dict[str, JsonObject]:
    return {"200": {"description": "The count: JSON, or text with Accept: text/plain",
                    "content": {JSON: {"schema": {"type": "integer", "minimum": 0}},
                                "text/plain": {"schema": {"type": "string", "pattern": "^[0-9]+$"}}}}}


def count_query_get(t: Typing) -> JsonObject:
    return operation(f"Count the results of {t.query_label}", t.query_tag, {
        **_count_answer(),
        **failures("BadRequest", "Forbidden", *(("NotFound",) if t.unknown_query else ()))},
        t.query_parameters)


def count_query_post(t: Typing) -> JsonObject:
    return operation(f"Count the results of {t.query_label} (parameters in the body)",
                     t.query_tag, {
        **_count_answer(),
        **failures("BadRequest", "Forbidden", "PayloadTooLarge",
                   *(("NotFound",) if t.unknown_query else ()))},
        body=json_body(t.query_body, required=t.query_body_required))


def _change_body(t: Typing, values: bool) -> JsonObject:
    properties: JsonObject = {"filter": ref("filter"),
                  "maxRows": nullable({
                      "type": "integer", "minimum": 1, "maximum": t.max_change_rows,
                      "description": f"The most rows this request may change (null or left "
                                     f"out: {t.max_change_rows}, also the most it may name); "
                                     "more matching rows are 409, nothing changed"})}
    if values:
        properties["values"] = {**t.entity_update, "description": "The attributes to set on "
                                "every matching row (not id or version)"}
    return {"type": "object", "required": ["filter", *(["values"] if values else [])],
            "properties": properties}


_CHANGED: JsonObject = {"type": "object", "required": ["count", "dryRun"], "properties": {
    "count": {"type": "integer", "minimum": 0,
              "description": "The rows changed (with dryRun=true: the rows matching now)"},
    "dryRun": {"type": "boolean"}}}
_DRY_RUN_TEXT = "Answer the number of matching rows and write nothing"
_CHANGE_TEXT = ("One transaction through the one write path: permissions, row rules, "
                "validators, audit fields, history and events per row; rows are chosen and "
                "locked in the transaction, no version check per row")


def update_by_search(t: Typing) -> JsonObject:
    return operation(f"Update every {t.one} a filter finds", t.tag, {
        **ok("How many rows were (or would be) updated", _CHANGED),
        **_entity_failures(t, "BadRequestOrInvalid", "Forbidden", "NotFound", "Conflict",
                           "PayloadTooLarge")},
        [flag("dryRun", _DRY_RUN_TEXT)], json_body(_change_body(t, True)),
        description=_CHANGE_TEXT)


def delete_by_search(t: Typing) -> JsonObject:
    return operation(f"Delete every {t.one} a filter finds (soft delete where it has it)", t.tag, {
        **ok("How many rows were (or would be) deleted", _CHANGED),
        **_entity_failures(t, "BadRequest", "Forbidden", "NotFound", "Conflict",
                           "PayloadTooLarge")},
        [flag("dryRun", _DRY_RUN_TEXT)], json_body(_change_body(t, False)),
        description=_CHANGE_TEXT)


# Operations whose shape depends on an entity or a query: the detailed
# document writes them once per entity (or query) instead of with {entityName}.
# One operation, written with the shapes of the generic API, an entity or a query.
OperationOf = Callable[[Typing], JsonObject]
ENTITY_OPERATIONS: dict[tuple[str, str], OperationOf] = {
    ("GET", E): list_entities, ("POST", E): create_entities,
    ("PUT", E): bulk_update, ("DELETE", E): bulk_delete,
    ("GET", f"{E}/search"): search_get, ("POST", f"{E}/search"): search_post,
    ("PUT", f"{E}/search"): update_by_search, ("DELETE", f"{E}/search"): delete_by_search,
    ("GET", f"{E}/search/count"): count_get, ("POST", f"{E}/search/count"): count_post,
    ("GET", f"{E}/aggregate"): aggregate_get, ("POST", f"{E}/aggregate"): aggregate_post,
    ("GET", f"{E}/<entity_id>"): load_entity, ("PUT", f"{E}/<entity_id>"): update_entity,
    ("DELETE", f"{E}/<entity_id>"): delete_entity,
    ("GET", f"{E}/<entity_id>/history"): entity_history,
    ("POST", f"{E}/<entity_id>/restore"): restore_entity,
    ("POST", f"{E}/<entity_id>/purge"): purge_entity,
    ("POST", f"{E}/import"): import_entities,
}
QUERY_OPERATIONS: dict[tuple[str, str], OperationOf] = {
    ("GET", f"{Q}/<query_name>"): run_query_get, ("POST", f"{Q}/<query_name>"): run_query_post,
    ("GET", f"{Q}/<query_name>/count"): count_query_get,
    ("POST", f"{Q}/<query_name>/count"): count_query_post,
}
