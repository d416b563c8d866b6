"""Entities API: generic CRUD and search (reference section 2)."""
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import MAX_QUERY_BODY, read_json_body
from ..data.read.aggregates import FUNCTIONS, aggregate
from ..data.answer.etags import tag_version
from ..data.read.request import Page
from ..data.write.softdelete import including_deleted
from ..errors import BadRequest, invalid_parameter_value
from ..jsonio import JsonObject, JsonValue, RawJson, loads, raw_array
from ..numbers import NumberOutOfBounds
from ..web import (empty_response, json_response, list_response, location_url, next_page_url,
                   query_bool, query_int, whole_number)
from .export import export_form, export_response
from .replay import idempotent, wrote

if TYPE_CHECKING:
    from ..data.access import Access
    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass
    from ..web import Context

BASE = "/rest/entities/<entity_name>"
T = TypeVar("T")


def _page(ctx: "Context") -> Page:
    args = ctx.request.args
    return Page(sort=args.get("sort"), limit=query_int(ctx.request, "limit"),
                offset=query_int(ctx.request, "offset"), after=args.get("after"),
                return_nulls=query_bool(ctx.request, "returnNulls"),
                return_count=query_bool(ctx.request, "returnCount"))


def _reader(ctx: "Context") -> "Access":
    """The caller; with ``?includeDeleted=true``, also seeing soft-deleted rows (by grant)."""
    if query_bool(ctx.request, "includeDeleted"):
        return including_deleted(ctx.access)
    return ctx.access


def _listed(ctx: "Context", rows: RawJson, total: int | None,
            cursor: str | None) -> Response:
    """A page of a list; its next page's URL continues with ``after``."""
    return list_response(rows, total,
                         next_page_url(ctx.request, ctx.app.settings.public_url, cursor))


def _answer(ctx: "Context", meta: "MetaClass", plan: "FetchPlan", filter_spec: JsonValue,
            page: Page) -> Response:
    """The page of a list or search, or every row as an export when asked (api/export.py)."""
    form = export_form(ctx.request)
    if form is not None and page.text is not None:
        raise BadRequest("Invalid parameter value",
                         "A ranked search (q) is answered as JSON pages, not exported")
    if form is not None:
        return export_response(ctx, form, _reader(ctx), meta, plan, filter_spec, page)
    return _listed(ctx, *ctx.app.data.search(_reader(ctx), meta, plan, filter_spec, page))


def list_entities(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    return _answer(ctx, meta, data.plan(meta, ctx.request.args.get("fetchPlan")), None, _page(ctx))


def load_entity(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    plan = data.plan(meta, ctx.request.args.get("fetchPlan"))
    # Parsed only when sent (Werkzeug builds an empty ETags object otherwise).
    known = ctx.request.if_none_match if "HTTP_IF_NONE_MATCH" in ctx.request.environ else None
    body, tag = data.load_tagged(_reader(ctx), meta, entity_id, plan,
                                 query_bool(ctx.request, "returnNulls"),
                                 unchanged=(lambda tag: known.contains_weak(tag[1:-1])) if known
                                 else None)
    headers = {"ETag": tag} if tag else None
    if body is None:
        return empty_response(304, headers=headers)
    return json_response(body, headers=headers)


def _if_match(ctx: "Context") -> tuple[int, ...] | None:
    """The versions the ``If-Match`` ETags stand for (strong comparison: weak
    tags match nothing); None without the header or with ``*``."""
    if "If-Match" not in ctx.request.headers:
        return None
    tags = ctx.request.if_match
    if tags.star_tag:
        return None
    return tuple({version for version in map(tag_version, tags.as_set()) if version is not None})


def entity_history(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    """One entity's HistoryItems, newest first (data/write/history.py)."""
    data = ctx.app.data
    meta = data.entity(entity_name)
    return _listed(ctx, *data.entity_history(ctx.access, meta, entity_id, _page(ctx)))


def _url_filter(ctx: "Context", required: bool = True) -> JsonValue:
    """The ``filter`` query parameter; without one, 400 when ``required``, else None."""
    text = ctx.request.args.get("filter")
    if text is None:
        if not required:
            return None
        raise BadRequest("Cannot parse entities filter", "Entities filter cannot be null")
    return ctx.app.data.url_filter(text, lambda text: json_arg(text, "filter"))


def json_arg(text: str, name: str) -> JsonValue:
    error = "Cannot parse entities filter" if name == "filter" else "Invalid parameter value"
    try:
        return loads(text)
    except NumberOutOfBounds as exc:
        raise BadRequest(error, str(exc)) from None
    except (ValueError, RecursionError):
        raise BadRequest(error, f"The {name} is not valid JSON") from None


def search_get(ctx: "Context", entity_name: str) -> Response:
    """A filter (``filter``), a ranked full-text search (``q``), or both."""
    data = ctx.app.data
    meta = data.entity(entity_name)
    plan = data.plan(meta, ctx.request.args.get("fetchPlan"))
    text = ctx.request.args.get("q")
    page = replace(_page(ctx), text=text, snippet=query_bool(ctx.request, "snippet"))
    return _answer(ctx, meta, plan, _url_filter(ctx, required=text is None), page)


def search_post(ctx: "Context", entity_name: str) -> Response:
    """A filter (``filter``), a ranked full-text search (``q``), or both."""
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = _search_body(ctx, searched=True)
    plan = data.plan(meta, body.get("fetchPlan"))
    return _answer(ctx, meta, plan, body.get("filter"), Page(
        sort=_typed(body, "sort", str), limit=_count(body, "limit"), offset=_count(body, "offset"),
        after=_typed(body, "after", str) or ctx.request.args.get("after"),
        return_nulls=bool(_typed(body, "returnNulls", bool)),
        return_count=bool(_typed(body, "returnCount", bool)),
        text=_typed(body, "q", str), snippet=bool(_typed(body, "snippet", bool))))


def _search_body(ctx: "Context", required: bool = True, searched: bool = False) -> JsonObject:
    """The JSON object of a search body; without a ``filter`` (or, when
    ``searched``, a ``q``), 400 when ``required`` (an empty body then is ``{}``)."""
    body = read_json_body(ctx.request, max_bytes=MAX_QUERY_BODY) if required \
        else read_json_body(ctx.request, max_bytes=MAX_QUERY_BODY, if_empty={})
    if not isinstance(body, dict):
        raise BadRequest("Malformed request JSON data structure", "The body must be a JSON object")
    if required and body.get("filter") is None and not (searched and body.get("q") is not None):
        raise BadRequest("Cannot parse entities filter", "Entities filter cannot be null")
    return body


def _typed(body: JsonObject, key: str, kind: type[T]) -> T | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise invalid_parameter_value(key)
    return value


def _count(body: JsonObject, key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_parameter_value(key)
    return whole_number(key, value)


def count_get(ctx: "Context", entity_name: str) -> Response:
    """Without a filter: every row the caller may see."""
    data = ctx.app.data
    return json_response(data.count(_reader(ctx), data.entity(entity_name),
                                    _url_filter(ctx, required=False)))


def count_post(ctx: "Context", entity_name: str) -> Response:
    """Without a filter (an empty body, ``{}``): every row the caller may see."""
    data = ctx.app.data
    return json_response(data.count(_reader(ctx), data.entity(entity_name),
                                    _search_body(ctx, required=False).get("filter")))


def aggregate_get(ctx: "Context", entity_name: str) -> Response:
    args = ctx.request.args
    spec: dict[str, JsonValue] = {key: args.get(key) for key in ("groupBy", "sort", *FUNCTIONS)
                                  if key in args}
    for key in ("filter", "having"):
        text = args.get(key)
        if text is not None:
            spec[key] = json_arg(text, key)
    spec["count"] = query_bool(ctx.request, "count")
    if args.get("limit") is not None:
        spec["limit"] = query_int(ctx.request, "limit")
    return _aggregated(ctx, entity_name, spec)


def aggregate_post(ctx: "Context", entity_name: str) -> Response:
    return _aggregated(ctx, entity_name, read_json_body(ctx.request, max_bytes=MAX_QUERY_BODY))


def _aggregated(ctx: "Context", entity_name: str, spec: JsonValue) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    return json_response(aggregate(ctx.access, meta, spec, ctx.app.settings.max_fetch_size(meta.name)))


def _response_plan(ctx: "Context", meta: "MetaClass") -> "FetchPlan | None":
    value = ctx.request.args.get("responseFetchPlan") or ctx.request.args.get("responseView")
    if not value or not ctx.app.settings.response_fetch_plans:
        return None
    plan: FetchPlan = ctx.app.data.plan(meta, value)
    return plan


@idempotent
def create(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = read_json_body(ctx.request)
    plan = _response_plan(ctx, meta)
    bulk = isinstance(body, list)
    return_nulls = query_bool(ctx.request, "returnNulls")
    saved = data.save(ctx.access, meta, body if bulk else [body], bulk=bulk,
                      answer=None if bulk or plan is None else (plan, return_nulls))
    wrote(ctx.request)
    collection = location_url(ctx.request, ctx.app.settings.public_url)
    if bulk:
        answer = data.saved_response(ctx.access, meta, saved, plan, return_nulls)
        return json_response(raw_array(answer), status=201, headers={"Location": collection})
    # An application's own string id may hold any character: percent-encoded,
    # so the header stays one valid line (a control character would break it).
    location = f"{collection}/{quote(str(saved[0].id), safe='')}"
    return _entity_response(data.saved_entity(ctx.access, meta, saved[0], plan, return_nulls),
                            status=201, headers={"Location": location})


def _entity_response(tagged: "tuple[RawJson | None, str | None]", status: int = 200,
                     headers: dict[str, str] | None = None) -> Response:
    """One entity's answer with its ETag, when it has one (as a GET answers it)."""
    body, tag = tagged
    return json_response(body, status=status,
                         headers={**(headers or {}), **({"ETag": tag} if tag else {})})


@idempotent
def update(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = read_json_body(ctx.request)
    plan = _response_plan(ctx, meta)
    saved = data.save(ctx.access, meta, [body], entity_ids=[entity_id], creating=False,
                      if_match=_if_match(ctx))
    wrote(ctx.request)
    return _entity_response(data.saved_entity(ctx.access, meta, saved[0], plan))


@idempotent
def bulk_update(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = read_json_body(ctx.request)
    if not isinstance(body, list):
        message = "The body of bulk update request should be an array"
        raise BadRequest(message, message)
    plan = _response_plan(ctx, meta)
    saved = data.save(ctx.access, meta, body, creating=False, bulk=True)
    wrote(ctx.request)
    return json_response(raw_array(data.saved_response(ctx.access, meta, saved, plan)))


def delete(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    data = ctx.app.data
    data.delete(ctx.access, data.entity(entity_name), [entity_id], if_match=_if_match(ctx))
    return empty_response(204)


def restore(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    """A soft-deleted entity back among the live ones; answers it (``_base``)."""
    data = ctx.app.data
    meta = data.entity(entity_name)
    key = data.restore(ctx.access, meta, entity_id)
    return _entity_response(data.load_tagged(ctx.access, meta, key, data.plan(meta, None)))


def purge(ctx: "Context", entity_name: str, entity_id: str) -> Response:
    data = ctx.app.data
    data.purge(ctx.access, data.entity(entity_name), entity_id)
    return empty_response(204)


def bulk_delete(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = read_json_body(ctx.request)
    if not isinstance(body, list):
        raise BadRequest("Malformed request JSON data structure", "The body must be a JSON array")
    ids: list[JsonValue] = []
    for item in body:
        if isinstance(item, dict):
            item = item.get("id")
        if item is None:
            message = "Required attribute id is not presented"
            raise BadRequest(message, message)
        ids.append(item)
    data.delete(ctx.access, meta, ids)
    return empty_response(204)


rules = [
    Rule(BASE, methods=["GET"], endpoint=list_entities),
    Rule(BASE, methods=["POST"], endpoint=create),
    Rule(BASE, methods=["PUT"], endpoint=bulk_update),
    Rule(BASE, methods=["DELETE"], endpoint=bulk_delete),
    Rule(f"{BASE}/search", methods=["GET"], endpoint=search_get),
    Rule(f"{BASE}/search", methods=["POST"], endpoint=search_post),
    Rule(f"{BASE}/search/count", methods=["GET"], endpoint=count_get),
    Rule(f"{BASE}/search/count", methods=["POST"], endpoint=count_post),
    Rule(f"{BASE}/aggregate", methods=["GET"], endpoint=aggregate_get),
    Rule(f"{BASE}/aggregate", methods=["POST"], endpoint=aggregate_post),
    Rule(f"{BASE}/<entity_id>", methods=["GET"], endpoint=load_entity),
    Rule(f"{BASE}/<entity_id>", methods=["PUT"], endpoint=update),
    Rule(f"{BASE}/<entity_id>", methods=["DELETE"], endpoint=delete),
    Rule(f"{BASE}/<entity_id>/history", methods=["GET"], endpoint=entity_history),
    Rule(f"{BASE}/<entity_id>/restore", methods=["POST"], endpoint=restore),
    Rule(f"{BASE}/<entity_id>/purge", methods=["POST"], endpoint=purge),
]
