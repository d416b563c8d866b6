"""The reports of an application and who may see and run them.

A caller sees a report when the report is available through REST and one of
the caller's resource roles grants it (``ResourceRole(reports=...)`` by code
or id, or ``*``). Any other report answers exactly as one that does not
exist: 404, and absent from lists. The specific policy
``reports.rest.enabled`` is checked by the API before any of this.
"""
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import BadRequest, NotFound
from ..jsonio import JsonObject, JsonValue, loads
from ..model.fetchplan import named_plan
from .openapi import reports_openapi
from .parameters import bind
from .runner import Document, Run

if TYPE_CHECKING:
    from ..data.access import Access
    from ..data.datamanager import DataManager
    from ..model.metadata import MetaClass
    from ..security.roles import Permissions, ResourceRole
    from .definitions import Group, Report

log = logging.getLogger("restsvc")


def _not_found(kind: str, entity_id: str) -> NotFound:
    return NotFound("Entity not found", f"Entity {kind} with id {entity_id} not found")


class Reports:
    def __init__(self, groups: "Mapping[str, Group]", reports: "Sequence[Report]",
                 resource_roles: "Iterable[ResourceRole]", max_rows: int) -> None:
        self.groups = dict(groups)
        self.by_id = {report.id: report for report in reports}
        self.max_rows = max_rows
        self.openapi = reports_openapi()
        # The same application may be deployed with other report files: a
        # grant of a report that is not there grants nothing, and says so.
        known = set(self.by_id) | {report.code for report in reports if report.code}
        for role in resource_roles:
            for grant in role.reports:
                if grant != "*" and grant not in known:
                    log.warning("role %s grants report %r, which is no report's code or id "
                                "(svc.reports.dir)", role.code, grant)

    def visible(self, permissions: "Permissions") -> "list[Report]":
        return [report for report in self.by_id.values() if _may_run(permissions, report)]

    def find(self, permissions: "Permissions", report_id: str) -> "Report":
        report = self.by_id.get(report_id)
        if report is None or not _may_run(permissions, report):
            raise _not_found("report_Report", report_id)
        return report

    def group(self, permissions: "Permissions", group_id: str) -> "Group":
        """A group is seen by callers who see one of its reports."""
        group = self.groups.get(group_id)
        if group is None or not any(r.group is group for r in self.visible(permissions)):
            raise _not_found("report_ReportGroup", group_id)
        return group

    def run(self, report: "Report", body: JsonObject, access: "Access", data: "DataManager",
            captions: Callable[[str], str],
            on_rows: Callable[[int], None] | None = None) -> Document:
        """The document for a run body ``{"template", "parameters"}`` (already
        checked to be a JSON object). ``on_rows(count)`` hears of each batch of
        rows as it is written (the metrics)."""
        template = report.template(body.get("template"))
        if template is None:
            raise BadRequest("Template not found", f"Template with code {body.get('template')} "
                                                   f"not found for report {report.id}")

        def load_entity(meta: "MetaClass", entity_id: Any) -> JsonValue:
            return loads(data.load(access, meta, entity_id, named_plan(meta, "_instance_name")))

        bound = bind(report, body.get("parameters"), load_entity)
        return Run(access, data, captions, self.max_rows, on_rows).document(template, bound)


def _may_run(permissions: "Permissions", report: "Report") -> bool:
    return report.rest_accessible and permissions.may_run_report(report.id, report.code)
