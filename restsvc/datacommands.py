"""``restsvc backup | restore | import | export``: moving an application's
data in and out (restsvc/docs: "Backups", "Data in and out")."""
import argparse
import json
import sys
from typing import Any

from .clibase import CommandError, app_of, service_access
from .errors import ImportRefused


def backup_command(args: argparse.Namespace) -> int:
    from . import backup
    from .backup import command
    app = app_of(args, init_schema=False, check_schema=False)
    try:
        if args.command == "backup":
            return command.backup(app, args.output or command.default_output(), print)
        return command.restore(app, args.file, print)
    except (backup.BackupError, OSError) as exc:
        raise CommandError(f"{args.command}: {exc}") from None


def import_command(args: argparse.Namespace) -> int:
    """Import a CSV or NDJSON file as the service itself (full access)."""
    from .data.transfer.imports import ImportOptions, import_rows
    app = app_of(args)
    fmt = args.format or ("csv" if args.file.lower().endswith(".csv") else "ndjson")
    access = service_access(app, None)
    options = ImportOptions(fmt, args.mode, args.partial, args.dry_run,
                            app.settings.import_max_errors)
    try:
        with open(args.file, "rb") as file:
            report = import_rows(access, app.data.entity(args.entity),
                                 iter(lambda: file.read(1 << 16), b""), options,
                                 app.settings.max_bulk_size, app.data.bind)
    except OSError as exc:
        raise CommandError(f"import: cannot read {args.file}: {exc.strerror}") from None
    except ImportRefused as exc:
        print(json.dumps(exc.body(), indent=2), file=sys.stderr)
        return 1
    print(json.dumps(report.body(options), indent=2))
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Every row of an entity (matching ``--filter``) to stdout, as the
    Entities API exports it, with the permissions of ``--role`` (default:
    system-full-access)."""
    from .data.transfer.export import Export
    from .exports import export_chunks
    from .jsonio import loads
    app = app_of(args)
    data = app.data
    meta = data.entity(args.entity)
    try:
        spec = None if args.filter is None else loads(args.filter)
    except ValueError as exc:
        raise CommandError(f"export: --filter is not valid JSON: {exc}") from None
    access = service_access(app, args.role)
    export = Export(meta, data.plan(meta, args.fetch_plan), spec, args.sort or "",
                    return_nulls=args.return_nulls)
    out = sys.stdout.buffer
    for chunk in export_chunks(data, access, export, args.format):
        out.write(chunk)
    out.flush()
    return 0


def add_data_commands(commands: Any) -> None:
    """The data commands' parsers, in ``restsvc``'s sub-commands."""
    p = commands.add_parser("backup", help="an online backup of the database and the fs file "
                                           "storage into one owner-only file")
    p.add_argument("--output", metavar="FILE", help="the archive to write (.tar, or .tar.gz "
                   "compressed; default: restsvc-backup-<UTC time>.tar)")
    p.set_defaults(run=backup_command)
    p = commands.add_parser("restore", help="a backup into an empty database and file storage")
    p.add_argument("file", metavar="FILE", help="the archive restsvc backup wrote")
    p.set_defaults(run=backup_command)
    p = commands.add_parser("import", help="import a CSV or NDJSON file of one entity "
                                           "(all rows or none; the manual's \"Import\")")
    p.add_argument("entity", metavar="ENTITY")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--format", choices=("csv", "ndjson"),
                   help="default: csv for a FILE ending in .csv, else ndjson")
    p.add_argument("--mode", default="create", choices=("create", "upsert", "upsertByKey"),
                   help="create rows, upsert by id, or upsert by the natural key")
    p.add_argument("--partial", action="store_true", help="keep the good rows")
    p.add_argument("--dry-run", action="store_true", help="check every row, write nothing")
    p.set_defaults(run=import_command)
    p = commands.add_parser("export", help="every row of an entity as CSV, NDJSON or a JSON "
                                           "array to stdout (restsvc/docs/data.md \"Export\")")
    p.add_argument("entity", metavar="ENTITY")
    p.add_argument("--filter", metavar="JSON", help="a search filter, as /search takes it")
    p.add_argument("--format", choices=("csv", "ndjson", "json"), default="csv")
    p.add_argument("--fetch-plan", metavar="PLAN", help="a fetch plan (default: _base)")
    p.add_argument("--sort", metavar="SORT", help="as the sort parameter of lists")
    p.add_argument("--return-nulls", action="store_true", help="null attributes too (JSON forms)")
    p.add_argument("--role", action="append", metavar="CODE",
                   help="read with this role's permissions (repeatable; default: "
                        "system-full-access)")
    p.set_defaults(run=export_command)
