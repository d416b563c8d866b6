"""Reports API (reference section 10): list, describe and run reports.

Every path needs the specific policy ``reports.rest.enabled`` (not
``rest.enabled``); a report the caller may not run is a 404.
"""
from collections.abc import Iterable
from typing import TYPE_CHECKING

import yaml
from werkzeug.routing import Rule
from werkzeug.wrappers import Response
from werkzeug.wsgi import wrap_file

from ..bodies import MAX_QUERY_BODY, read_json_body
from ..errors import BadRequest, Forbidden
from ..security.scopes import checks
from ..web import NO_STORE, content_disposition, json_response, releasing

if TYPE_CHECKING:
    from ..reports.registry import Reports
    from ..web import Context

BASE = "/rest/reports"


def _reports(ctx: "Context") -> "Reports":
    if not ctx.permissions.specific("reports.rest.enabled"):
        raise Forbidden("Forbidden", "User is not allowed to use the Reports REST API")
    return ctx.app.reports


@checks("reports.rest.enabled")
def list_reports(ctx: "Context") -> Response:
    return json_response([r.brief() for r in _reports(ctx).visible(ctx.permissions)])


@checks("reports.rest.enabled")
def get_report(ctx: "Context", report_id: str) -> Response:
    return json_response(_reports(ctx).find(ctx.permissions, report_id).detail())


@checks("reports.rest.enabled")
def get_group(ctx: "Context", group_id: str) -> Response:
    return json_response(_reports(ctx).group(ctx.permissions, group_id).to_json())


@checks("reports.rest.enabled")
def run_report(ctx: "Context", report_id: str) -> Response:
    reports = _reports(ctx)
    report = reports.find(ctx.permissions, report_id)
    body = read_json_body(ctx.request, "Invalid JSON body", MAX_QUERY_BODY) if ctx.request.content_length else {}
    if not isinstance(body, dict):
        raise BadRequest("Invalid JSON body", "The body must be a JSON object")
    attachment = body.get("attachment", False)
    if not isinstance(attachment, bool):
        raise BadRequest("Invalid JSON body", "attachment must be true or false")
    instruments = ctx.app.instruments
    document = reports.run(report, body, ctx.access, ctx.app.data,
                           ctx.app.messages.captions(ctx.locale),
                           instruments.report_rows.inc_by if instruments is not None else None)
    # The output holds the rows the caller may see: never kept for anyone else.
    headers = {**NO_STORE, "Expires": "Thu, 01 Jan 1970 00:00:00 GMT",
               "Content-Type": document.content_type, "Content-Disposition":
               content_disposition("attachment" if attachment else "inline", document.file_name)}
    content: Iterable[bytes]
    if document.file is not None:
        headers["Content-Length"] = str(document.size)
        content = wrap_file(ctx.request.environ, document.file)
    else:
        assert document.chunks is not None      # a CSV document's
        content = releasing(document.chunks, ctx.app.database)
    return Response(content, headers=headers, direct_passthrough=True)


@checks("reports.rest.enabled")
def openapi(ctx: "Context", extension: str) -> Response:
    """JSON, or YAML for the .yaml path or ``Accept: application/yaml``."""
    document = _reports(ctx).openapi
    accepted = ctx.request.accept_mimetypes.best_match(["application/json", "application/yaml"])
    if extension == "yaml" or accepted == "application/yaml":
        return Response(yaml.safe_dump(document, sort_keys=False, allow_unicode=True),
                        content_type="application/yaml;charset=UTF-8")
    return json_response(document)


rules = [
    Rule(f"{BASE}/report", methods=["GET"], endpoint=list_reports),
    Rule(f"{BASE}/report/<report_id>", methods=["GET"], endpoint=get_report),
    Rule(f"{BASE}/group/<group_id>", methods=["GET"], endpoint=get_group),
    Rule(f"{BASE}/run/<report_id>", methods=["POST"], endpoint=run_report),
    Rule(f"{BASE}/docs/openapi.<any(json, yaml):extension>", methods=["GET"], endpoint=openapi),
]
