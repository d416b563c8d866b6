"""Import: rows of a CSV or NDJSON body written through the one write path.

Each row is planned by ``importer.Importer`` (permissions, values,
references, validators) and written by ``writer.Writer`` (row rules, audit,
the statement, history, the outbox row), all rows in ONE write transaction,
each row in a savepoint so a refused row leaves the others as they were,
except creates of an all-or-nothing import that name no other row: those
are written ``_Batch.SIZE`` at a time by ``Writer.save_all`` (a refused batch
is written again a row at a time, so each refusal names its line). All or
nothing by default: the first bad row stops the writing (the rest is still
checked, for the report) and the transaction is rolled back; ``partial``
keeps the good rows; ``dry_run`` checks and writes every row and rolls
everything back, so it reports what the import would. Memory holds one
batch and at most ``max_errors`` bad rows' errors, whatever the body's size.
"""
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...db import write_transaction
from ...errors import (ApiError, BadRequest, ImportRefused, Text, UnsupportedMediaType,
                      ValidationFailed)
from ...jsonio import JsonObject, JsonValue
from ..access import require
from ..ids import id_or_none
from ..write.importer import Importer
from ..write.operation import Operation
from ..read.loader import visible_ids
from ..tenancy import tenant_condition
from .rowsource import FORMATS, Row, rows, violation
from ..write.hooks import Bind
from ..write.writer import Writer

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty
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
    errors: list[JsonObject] = field(default_factory=list)
    errors_truncated: bool = False

    def body(self, options: ImportOptions) -> JsonObject:
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
                options: ImportOptions, max_entities: int, bind: Bind | None = None) -> ImportReport:
    """Import the body's rows; ImportRefused (400) when a row is bad and not
    ``partial``; the report (counts, bad rows) otherwise. ``bind``: the data
    manager's, for lifecycle hooks that ask for ``data`` (write/hooks.py)."""
    if options.mode == "create":
        require(access, meta, "create")
    elif not (access.permissions.can(meta.name, "create")
              or access.permissions.can(meta.name, "update")):
        require(access, meta, "update")
    check_options(meta, options)
    report = ImportReport()
    try:
        with write_transaction(access.database):
            _run(Writer(access, bind), meta, rows(options.fmt, chunks, access, meta), options,
                 max_entities, report)
            if options.dry_run or (report.failed and not options.partial):
                raise _RolledBack()
    except _RolledBack:
        pass
    if report.failed and not options.partial:
        raise ImportRefused(report.errors, report.errors_truncated)
    return report


def _run(writer: Writer, meta: "MetaClass", source: Iterator[Row], options: ImportOptions,
         max_entities: int, report: ImportReport) -> None:
    access = writer.access
    batch = _Batch(writer, options, report)
    for line, body in source:
        if isinstance(body, list):
            errors, operation = body, None
        else:
            if batch.rows and not _plain(meta, body):
                batch.write()           # a row that reads others sees every row before it
            errors, operation = _plan(access, meta, body, options, max_entities)
        if operation is not None and batch.writing:
            if batch.takes(line, operation):
                continue
            errors = _save(writer, operation)
        if errors:
            batch.write()               # the rows before it first: errors in line order
        if not batch.count(line, errors, operation):
            return      # nothing will be written: no more rows to check
    batch.write()


class _Batch:
    """Rows of an import that may be written together (``Writer.save_all``):
    creates of rows that refer to no other row, all or nothing. A refused
    batch is rolled back to its savepoint and written again a row at a time,
    so each refusal names its line."""

    SIZE = 500

    def __init__(self, writer: Writer, options: ImportOptions, report: ImportReport) -> None:
        self.writer, self.options, self.report = writer, options, report
        self.rows: list[tuple[int, Operation]] = []
        self.writing = True         # False after a refused row, unless partial

    def takes(self, line: int, operation: Operation) -> bool:
        """Whether ``operation`` waits in the batch: a create of a create-only
        import (an upsert must see the rows before it as written)."""
        if self.options.partial or self.options.mode != "create" or not operation.creating:
            return False
        self.rows.append((line, operation))
        if len(self.rows) >= self.SIZE:
            self.write()
        return True

    def write(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        try:
            with self.writer.access.database.atomic():
                self.writer.save_all([operation for _, operation in rows], _started)
        except ApiError:
            for line, operation in rows:
                errors = _save(self.writer, operation) if self.writing else []
                self.count(line, errors, operation)
            return
        self.report.created += len(rows)

    def count(self, line: int, errors: list[JsonObject], operation: "Operation | None") -> bool:
        """Count one row; False when the import can stop checking."""
        report = self.report
        if not errors:
            if operation is not None and operation.creating:
                report.created += 1
            else:
                report.updated += 1
            return True
        report.failed += 1
        self.writing = self.options.partial
        if len(report.errors) < self.options.max_errors:
            report.errors.append({"line": line, "errors": errors})
            return True
        report.errors_truncated = True
        return self.options.partial


def _started() -> None:
    """The import's write transaction is open already."""


def _plain(meta: "MetaClass", body: JsonObject) -> bool:
    """Whether a row names no other row (no reference, member or composition value)."""
    for name, value in body.items():
        prop = meta.properties.get(name)
        if prop is None or value is None:
            continue
        if prop.is_embedded and isinstance(value, dict):
            if not _plain(prop.related, value):
                return False
        elif prop.is_reference:
            return False
    return True


def _plan(access: "Access", meta: "MetaClass", body: JsonObject, options: ImportOptions,
          max_entities: int) -> "tuple[list[JsonObject], Operation | None]":
    """(errors, the planned write) of one row."""
    importer = Importer(access, False, max_entities)
    try:
        _resolve_references(access, meta, body)
        entity_id, creating = _target(access, meta, body, options)
        operation = importer.plan(meta, body, "", entity_id, creating)
        if importer.violations:
            raise ValidationFailed(importer.violations)
        return [], operation
    except ApiError as exc:
        return _errors(exc), None


def _save(writer: Writer, operation: Operation) -> list[JsonObject]:
    """Write one planned row in a savepoint (a refused row leaves the others;
    PostgreSQL also needs it to go on after a refused statement); its errors."""
    try:
        with writer.access.database.atomic():
            writer.save(operation)
        return []
    except ApiError as exc:
        return _errors(exc)


def _errors(exc: ApiError) -> list[JsonObject]:
    """A refused row's errors: its violations, or the refusal as one."""
    if isinstance(exc, ValidationFailed):
        violations: list[JsonObject] = exc.violations
        return violations
    return [violation("", str(exc.details) or exc.error)]


def _target(access: "Access", meta: "MetaClass", body: JsonObject,
            options: ImportOptions) -> "tuple[str | int | None, bool | None]":
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


def _by_key(access: "Access", meta: "MetaClass", key: str, values: list[JsonValue]
            ) -> list[str | int]:
    """The ids of the live rows the caller sees whose natural key is one of ``values``."""
    model = meta.model
    column = meta.properties[key].field
    query = model.select(model.id).where(column.in_(values)).limit(2)
    if meta.soft_delete:
        query = query.where(model._meta.fields["deletedDate"].is_null())
    mine = tenant_condition(access, meta)     # a key unique per tenant repeats across tenants
    if mine is not None:
        query = query.where(mine)
    ids = [meta.row_id(row.id) for row in query]
    seen = visible_ids(access, meta, ids) if ids else set()
    return [i for i in ids if i in seen]


def _resolve_references(access: "Access", meta: "MetaClass", body: JsonObject) -> None:
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


def _by_natural_key(access: "Access", prop: "MetaProperty", value: JsonValue) -> None:
    target = prop.related
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
