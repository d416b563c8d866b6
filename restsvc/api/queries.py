"""Queries API: predefined queries from ``svc.rest.queries-config`` (reference section 3)."""
from typing import TYPE_CHECKING, Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import MAX_QUERY_BODY, read_json_body
from ..data.read.queries import query_string_values
from ..data.read.request import Page
from ..errors import BadRequest
from ..web import json_response, list_response, next_page_url, query_bool, query_int
from .export import export_form, export_response

if TYPE_CHECKING:
    from ..data.read.queries import Query
    from ..web import Context

BASE = "/rest/queries/<entity_name>"


def list_queries(ctx: "Context", entity_name: str) -> Response:
    return json_response(ctx.app.queries.describe(ctx.access, ctx.app.data.entity(entity_name)))


def _query_and_values(ctx: "Context", entity_name: str,
                      query_name: str) -> "tuple[Query, dict[str, Any]]":
    """The query and its raw parameter values: the query string for GET,
    one JSON object in the body for POST (no body: no parameters)."""
    query = ctx.app.queries.find(ctx.access, ctx.app.data.entity(entity_name), query_name)
    request = ctx.request
    if request.method == "GET":
        return query, query_string_values(query, dict(request.args.lists()))
    if not request.content_length:
        return query, {}
    body = read_json_body(request, max_bytes=MAX_QUERY_BODY)
    if not isinstance(body, dict):
        raise BadRequest("Malformed request JSON data structure", "The body must be a JSON object")
    return query, body


def run_query(ctx: "Context", entity_name: str, query_name: str) -> Response:
    query, values = _query_and_values(ctx, entity_name, query_name)
    args = ctx.request.args
    form = export_form(ctx.request)
    if form is not None:        # every row, as api/export.py streams them
        plan, spec, page = ctx.app.queries.search_of(
            ctx.access, query, values, args.get("fetchPlan") or args.get("view"), _page(ctx))
        return export_response(ctx, form, ctx.access, query.entity, plan, spec, page)
    rows, total, cursor = ctx.app.queries.run(
        ctx.access, query, values, args.get("fetchPlan") or args.get("view"), _page(ctx))
    return list_response(rows, total, next_page_url(ctx.request, ctx.app.settings.public_url,
                                                    cursor))


def _page(ctx: "Context") -> Page:
    """A run's paging: what the request asks (no sort: the query's filter orders by id)."""
    return Page(limit=query_int(ctx.request, "limit"), offset=query_int(ctx.request, "offset"),
                after=ctx.request.args.get("after"),
                return_nulls=query_bool(ctx.request, "returnNulls"),
                return_count=query_bool(ctx.request, "returnCount"))


def count_query(ctx: "Context", entity_name: str, query_name: str) -> Response:
    """A bare number: JSON, or text when the client asks for ``text/plain``."""
    count = ctx.app.queries.count(ctx.access, *_query_and_values(ctx, entity_name, query_name))
    if ctx.request.accept_mimetypes.best_match(["application/json", "text/plain"]) == "text/plain":
        return Response(str(count), content_type="text/plain;charset=UTF-8")
    return json_response(count)


rules = [
    Rule(BASE, methods=["GET"], endpoint=list_queries),
    Rule(f"{BASE}/<query_name>", methods=["GET", "POST"], endpoint=run_query),
    Rule(f"{BASE}/<query_name>/count", methods=["GET", "POST"], endpoint=count_query),
]
