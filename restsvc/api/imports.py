"""Import API: ``POST /rest/entities/<entity>/import`` with a CSV or NDJSON body."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..data.transfer.imports import IMPORT_FAILED, ImportOptions, import_rows
from ..data.transfer.rowsource import FORMATS
from ..errors import BadRequest, PayloadTooLarge
from ..uploads import body_chunks
from ..web import json_response, query_bool, streams_body

if TYPE_CHECKING:
    from ..web import Context, Request

# Body types -> format (none: CSV); a parameter (charset) is ignored: the body is UTF-8.
# A client that sends only bytes (generated clients) says the format in ``format``.
FORMAT_OF = {"": "csv", "text/csv": "csv", "application/x-ndjson": "ndjson",
             "application/ndjson": "ndjson", "application/jsonl": "ndjson"}
BYTES = "application/octet-stream"


def _format(request: "Request") -> str:
    if request.mimetype != BYTES:
        return FORMAT_OF.get(request.mimetype, "")
    fmt = request.args.get("format", "csv")
    if fmt not in FORMATS:
        raise BadRequest("Invalid parameter value", "format must be csv or ndjson")
    return str(fmt)


@streams_body
def import_entities(ctx: "Context", entity_name: str) -> Response:
    settings = ctx.app.settings
    meta = ctx.app.data.entity(entity_name)
    request = ctx.request
    options = ImportOptions(_format(request), request.args.get("mode", "create"),
                            query_bool(request, "partial"), query_bool(request, "dryRun"),
                            settings.import_max_errors)
    limit = settings.import_max_size
    too_large = PayloadTooLarge(IMPORT_FAILED, f"An import body may have at most {limit} bytes "
                                               "(svc.rest.import-max-size)")
    report = import_rows(ctx.access, meta, body_chunks(request, limit, too_large, IMPORT_FAILED),
                         options, settings.max_bulk_size, ctx.app.data.bind)
    return json_response(report.body(options))


rules = [
    Rule("/rest/entities/<entity_name>/import", methods=["POST"], endpoint=import_entities),
]
