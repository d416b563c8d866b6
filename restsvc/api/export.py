"""Exports of lists, searches and predefined queries (restsvc/docs/data.md
"Export"): the answer's form is chosen by ``?format=csv|ndjson|json``
or by ``Accept``; ``application/json`` (or no preference) keeps the paged
JSON list. The rows are streamed while the response is sent (exports.py)."""
from collections.abc import Iterator
from typing import TYPE_CHECKING

from werkzeug.wrappers import Response

from ..data.read.request import Page
from ..data.transfer.export import Export
from ..errors import invalid_parameter_value
from ..exports import CONTENT_TYPES, CSV, FILE_EXTENSIONS, JSON_ARRAY, NDJSON, export_chunks
from ..jsonio import JsonValue
from ..web import NO_STORE, content_disposition, releasing

if TYPE_CHECKING:
    from ..data.access import Access
    from ..model.fetchplan import FetchPlan
    from ..model.metadata import MetaClass
    from ..web import Context, Request

ARRAY_TYPE = "application/vnd.restsvc.array+json"    # every row as one JSON array
_FORMS_BY_TYPE = {"text/csv": CSV, "application/x-ndjson": NDJSON, "application/ndjson": NDJSON,
                  ARRAY_TYPE: JSON_ARRAY}
# The paged list first: it wins a tie (*/*, no Accept header).
_OFFERED = ["application/json", *_FORMS_BY_TYPE]
_PAGED = frozenset((None, "", "*/*", "application/json"))   # Accept values that keep the paged list


def export_form(request: "Request") -> str | None:
    """CSV, NDJSON or JSON_ARRAY when the request asks for an export (the
    ``format`` parameter, else ``Accept``); None for the paged JSON list."""
    value = request.args.get("format")
    if value is not None:
        if value not in FILE_EXTENSIONS:
            raise invalid_parameter_value("format")
        return value
    if request.environ.get("HTTP_ACCEPT") in _PAGED:    # what curl and most clients send: not parsed
        return None
    return _FORMS_BY_TYPE.get(request.accept_mimetypes.best_match(_OFFERED) or "")


def export_response(ctx: "Context", form: str, access: "Access", meta: "MetaClass",
                    plan: "FetchPlan", filter_spec: JsonValue, page: Page) -> Response:
    """Every row the list of this page would page through (its ``limit`` and
    ``offset`` only when given; ``after``: a page's cursor to start after),
    streamed. The first chunk is read before answering, so a bad filter or a
    refusal is still a JSON error."""
    data = ctx.app.data
    key = data.after_key(page.after, page.offset, meta, page.sort, filter_spec)
    export = Export(meta, plan, filter_spec, page.sort or "", page.offset, page.limit, key,
                    page.return_nulls)
    chunks = export_chunks(data, access, export, form)
    first = next(chunks, None)
    headers = {**NO_STORE, "Content-Type": CONTENT_TYPES[form], "Vary": "Accept",
               "Content-Disposition": content_disposition(
                   "attachment", f"{meta.name}.{FILE_EXTENSIONS[form]}")}
    return Response(releasing(_starting(first, chunks), ctx.app.database), headers=headers,
                    direct_passthrough=True)


def _starting(first: bytes | None, chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks, the first one already read; closing this closes them."""
    if first is not None:
        yield first
    yield from chunks
