"""Import: rows of a CSV or NDJSON body written through the one write path.

Each row is planned by ``importer.Importer`` (permissions, values,
references, validators) and written by ``writer.Writer`` (row rules, audit,
the statement, history, the outbox row), all rows in ONE write transaction,
each row in a savepoint so a refused row leaves the others as they were.
All or nothing by default: the first bad row stops the writing (the rest is
still checked, for the report) and the transaction is rolled back;
``partial`` keeps the good rows; ``dry_run`` checks and writes every row and
rolls everything back, so it reports what the import would. Memory holds one
row and at most ``max_errors`` bad rows' errors, whatever the body's size.
"""
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...db import is_sqlite, write_transaction
from ...errors import (ApiError, BadRequest, ImportRefused, Text, UnsupportedMediaType,
                      ValidationFailed)
from ..access import require
from ..write.importer import Importer, id_or_none
from ..read.loader import visible_ids
from .rowsource import FORMATS, Row, rows, violation
from ..write.writer import Writer

if TYPE_CHECKING:
    from ...model.metadata import MetaClass
    from ..access import Access

MODES = ("create", "upsert", "upsertByKey")
IMPORT_FAILED = "Import failed"


@dataclass(frozen=True)
class ImportOptions:
    fmt: str = "csv"
    mode: str = "create"         # create | upsert (by id) | upsertByKey (the natural key)
    partial: bool = False        # keep the good rows
    dry_run: bool = False        # check everything, write nothing
    max_errors: int = 100        # bad rows reported at most (svc.rest.import-max-errors)


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    failed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    errors_truncated: bool = False

    def body(self, options: ImportOptions) -> dict[str, Any]:
        return {"created": self.created, "updated": self.updated, "failed": self.failed,
                "dryRun": options.dry_run, "errors": self.errors,
                "errorsTruncated": self.errors_truncated}


class _RolledBack(Exception):
    """Ends the write transaction of an import that keeps nothing."""


def check_options(meta: "MetaClass", options: ImportOptions) -> None:
    if options.fmt not in FORMATS:
        raise UnsupportedMediaType(IMPORT_FAILED, "Send the rows as text/csv, "
                                                  "application/x-ndjson or bytes with format")
    if options.mode not in MODES:
        raise BadRequest("Invalid parameter value", Text(
            "invalidImportMode", "mode must be one of {modes}", modes=", ".join(MODES)))
    if options.mode == "upsertByKey" and meta.natural_key is None:
        raise BadRequest("Invalid parameter value", Text(
            "noNaturalKey", "{entity} declares no natural key: import by id", entity=meta.name))


def import_rows(access: "Access", meta: "MetaClass", chunks: Iterable[bytes],
                options: ImportOptions, max_entities: int) -> ImportReport:
    """Import the body's rows; ImportRefused (400) when a row is bad and not
    ``partial``; the report (counts, bad rows) otherwise."""
    if options.mode == "create":
        require(access, meta, "create")
    elif not (access.permissions.can(meta.name, "create")
              or access.permissions.can(meta.name, "update")):
        require(access, meta, "update")
    check_options(meta, options)
    report = ImportReport()
    try:
        with write_transaction(access.database):
            _run(access, meta, rows(options.fmt, chunks, access, meta), options, max_entities,
                 report)
            if options.dry_run or (report.failed and not options.partial):
                raise _RolledBack()
    except _RolledBack:
        pass
    if report.failed and not options.partial:
        raise ImportRefused(report.errors, report.errors_truncated)
    return report


def _run(access: "Access", meta: "MetaClass", source: Iterator[Row], options: ImportOptions,
         max_entities: int, report: ImportReport) -> None:
    writing = True
    for line, body in source:
        errors, creating = (body, False) if isinstance(body, list) else \
            _write(access, meta, body, options, max_entities, writing)
        if not errors:
            if creating:
                report.created += 1
            else:
                report.updated += 1
            continue
        report.failed += 1
        writing = options.partial
        if len(report.errors) < options.max_errors:
            report.errors.append({"line": line, "errors": errors})
        else:
            report.errors_truncated = True
            if not options.partial:
                return      # nothing will be written: no more rows to check


def _write(access: "Access", meta: "MetaClass", body: dict[str, Any], options: ImportOptions,
           max_entities: int, writing: bool) -> "tuple[list[dict[str, Any]], bool]":
    """(errors, whether it creates) of one row, written when ``writing``."""
    importer = Importer(access, False, max_entities)
    try:
        _resolve_references(access, meta, body)
        entity_id, creating = _target(access, meta, body, options)
        operation = importer.plan(meta, body, "", entity_id, creating)
        if importer.violations:
            raise ValidationFailed(importer.violations)
        if writing and (options.partial or not is_sqlite(access.database)):
            # A savepoint: a refused row leaves the others (PostgreSQL also
            # needs it to go on checking rows after a refused statement).
            with access.database.atomic():
                Writer(access).save(operation)
        elif writing:       # all or nothing on SQLite: a refusal ends the writing anyway
            Writer(access).save(operation)
        return [], operation.creating
    except ValidationFailed as exc:
        return exc.violations, False
    except ApiError as exc:
        return [violation("", str(exc.details) or exc.error)], False


def _target(access: "Access", meta: "MetaClass", body: dict[str, Any],
            options: ImportOptions) -> "tuple[Any, bool | None]":
    """(the id to write, whether the row creates): create makes new rows
    only; upsert updates the row of the body's id, if the caller sees one;
    upsertByKey the live row of the natural key's value."""
    if options.mode == "create":
        return None, True
    if options.mode == "upsert":
        return None, None
    key = str(meta.natural_key)      # check_options: declared
    value = body.get(key)
    if value is None:
        raise ValidationFailed([violation(key, "must not be null: it is the natural key")])
    found = _by_key(access, meta, key, [value])
    if len(found) > 1:
        raise ValidationFailed([violation(key, "more than one row has this natural key", value)])
    return (found[0], False) if found else (None, True)


def _by_key(access: "Access", meta: "MetaClass", key: str, values: list[Any]) -> list[Any]:
    """The ids of the live rows the caller sees whose natural key is one of ``values``."""
    model: Any = meta.model
    column = meta.properties[key].field
    query = model.select(model.id).where(column.in_(values)).limit(2)
    if meta.soft_delete:
        query = query.where(model.deletedDate.is_null())
    ids = [row.id for row in query]
    ids = [meta.row_id(i) for i in ids]
    seen = visible_ids(access, meta, ids) if ids else set()
    return [i for i in ids if i in seen]


def _resolve_references(access: "Access", meta: "MetaClass", body: dict[str, Any]) -> None:
    """References by the target's natural key (``{"email": ...}``) -> by id."""
    for name, value in body.items():
        prop = meta.properties.get(name)
        if prop is None:
            continue
        if prop.is_embedded and isinstance(value, dict):
            _resolve_references(access, prop.related, value)
        elif prop.link is not None and isinstance(value, list):
            for member in value:
                _by_natural_key(access, prop, member)
        elif prop.is_reference and not prop.is_collection:
            _by_natural_key(access, prop, value)


def _by_natural_key(access: "Access", prop: Any, value: Any) -> None:
    target = prop.target
    key = getattr(target, "natural_key", None)
    if not isinstance(value, dict) or value.get("id") is not None or key is None \
            or value.get(key) is None:
        return
    found = _by_key(access, target, key, [value[key]]) \
        if access.permissions.can(target.name, "read") else []
    if len(found) != 1:
        raise BadRequest("Entity creation failed", f"Referenced entity for property "
                                                   f"'{prop.name}' is missing")
    value["id"] = found[0] if id_or_none(target, found[0]) is not None else None
