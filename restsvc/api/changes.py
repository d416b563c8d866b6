"""Changes by filter: ``PUT`` and ``DELETE`` on an entity's search
(restsvc/data/transfer/changes.py). The body is the search body's filter, plus the
values to set (``PUT``) and the guard ``maxRows``; ``?dryRun=true`` answers
the count and writes nothing. Answer: ``{"count": n}``."""
from typing import TYPE_CHECKING, Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import read_json_body
from ..data.transfer.changes import delete_by_filter, max_rows_of, update_by_filter
from ..errors import BadRequest
from ..web import json_response, query_bool
from .replay import idempotent, wrote

if TYPE_CHECKING:
    from ..web import Context

PATH = "/rest/entities/<entity_name>/search"


def _body(ctx: "Context") -> dict[str, Any]:
    body = read_json_body(ctx.request)
    if not isinstance(body, dict):
        raise BadRequest("Malformed request JSON data structure", "The body must be a JSON object")
    return body


def _answer(ctx: "Context", count: int, dry_run: bool) -> Response:
    if not dry_run:
        wrote(ctx.request)
    response: Response = json_response({"count": count, "dryRun": dry_run})
    return response


@idempotent
def update_by_search(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = _body(ctx)
    dry_run = query_bool(ctx.request, "dryRun")
    count = update_by_filter(data, ctx.access, meta, body.get("filter"), body.get("values"),
                             max_rows_of(body.get("maxRows"), ctx.app.settings.max_change_rows),
                             dry_run)
    return _answer(ctx, count, dry_run)


def delete_by_search(ctx: "Context", entity_name: str) -> Response:
    data = ctx.app.data
    meta = data.entity(entity_name)
    body = _body(ctx)
    dry_run = query_bool(ctx.request, "dryRun")
    count = delete_by_filter(data, ctx.access, meta, body.get("filter"),
                             max_rows_of(body.get("maxRows"), ctx.app.settings.max_change_rows),
                             dry_run)
    return _answer(ctx, count, dry_run)


rules = [
    Rule(PATH, methods=["PUT"], endpoint=update_by_search),
    Rule(PATH, methods=["DELETE"], endpoint=delete_by_search),
]
