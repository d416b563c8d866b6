"""``restsvc serve | deliver | initdb | demo-data | migrate | backup | restore | import |
export | routes | bundle | new | history | events | hash-secret | user | key``."""
import argparse
import getpass
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .clibase import CommandError, app_of, service_access
from .datacommands import add_data_commands
from .errors import ApiError
from .keycommands import add_key_commands
from .tenantcommands import add_tenant_commands, existing_rows_tenant, tenant_of_existing_rows
from .settings import SettingsError, load_settings

if TYPE_CHECKING:
    from gunicorn.arbiter import Arbiter      # gunicorn has no type information

    from .app import RestApp


# What ``restsvc serve`` runs, for a gunicorn started by hand (restsvc/wsgi.py).
WSGI_COMMAND = "gunicorn -c python:restsvc.gunicorn_config restsvc.wsgi:app"


def serve(args: argparse.Namespace) -> None:
    import logging

    from gunicorn.app.base import BaseApplication

    from . import gunicorn_config as defaults

    # Schema and demo data are prepared once here, before the workers fork.
    app = app_of(args, announce=True)
    settings = app.settings
    supervisor = None
    if settings.webhooks_deliver_in_serve:
        from .events.supervisor import DeliverySupervisor
        from .events.webhooks import sync_settings
        sync_settings(app.database, app.metadata, settings.webhooks,
                      settings.webhooks_allow_private)
        supervisor = DeliverySupervisor(
            lambda master: deliver_command(argparse.Namespace(**{**vars(args), "parent": master})),
            grace=settings.webhooks_timeout + 5, log=logging.getLogger("restsvc"))

    streams = None
    if settings.events_streams_in_serve:
        from .streamcommands import stream_process
        streams = stream_process(args)
    children = [child for child in (supervisor, streams) if child is not None]

    def when_ready(arbiter: "Arbiter") -> None:
        defaults.ready(arbiter, args.drain)
        for child in children:
            defaults.supervise(arbiter, child)

    def stop_children() -> None:
        for child in children:
            child.stop()
        if streams is not None:
            from .streamcommands import stream_process_gone
            stream_process_gone()

    def on_exit(arbiter: "Arbiter") -> None:
        stop_children()
        defaults.on_exit(arbiter)

    # gunicorn has no type information: its base class is Any to mypy.
    class Server(BaseApplication):  # type: ignore[misc, unused-ignore]
        def load_config(self) -> None:
            self.cfg.set("bind", f"{args.host}:{args.port}")
            self.cfg.set("worker_class", defaults.worker_class)
            self.cfg.set("keepalive", defaults.keepalive)
            self.cfg.set("limit_request_line", defaults.limit_request_line)
            self.cfg.set("forwarded_allow_ips", ",".join(settings.trusted_proxies))
            self.cfg.set("forwarder_headers", defaults.forwarder_headers)
            self.cfg.set("secure_scheme_headers", defaults.secure_scheme_headers)
            for name in ("workers", "threads", "timeout", "graceful_timeout"):
                self.cfg.set(name, getattr(args, name))
            self.cfg.set("accesslog", "-" if args.access_log else None)
            if args.control_socket:
                self.cfg.set("control_socket", args.control_socket)
            else:
                self.cfg.set("control_socket_disable", True)
            self.cfg.set("when_ready", when_ready)
            self.cfg.set("on_starting", defaults.on_starting)
            self.cfg.set("post_worker_init", defaults.post_worker_init)
            self.cfg.set("on_exit", on_exit)

        def load(self) -> "RestApp":
            # The master said what it prepared (above); workers say nothing again.
            return app_of(args)

    try:
        Server().run()
    finally:
        stop_children()         # the master only (a worker unwinds through here too)


def initdb(args: argparse.Namespace) -> None:
    app = app_of(args, init_schema=False, check_schema=False)
    app.init_schema(demo_data=False)
    print(f"schema ready: {app.settings.database_url}")


def demo_data(args: argparse.Namespace) -> None:
    app = app_of(args, init_schema=False, check_schema=False)
    app.init_schema(demo_data=True)
    print("demo data ready")


def migrate_command(args: argparse.Namespace) -> int:
    from .schema import command
    if args.lock_timeout < 0:
        raise CommandError("migrate: --lock-timeout must not be negative")
    app = app_of(args, init_schema=False, check_schema=False)
    try:
        with existing_rows_tenant(app, args.tenant):
            code = command.run(app, args, print)
    except command.CommandFailed as exc:
        raise CommandError(str(exc)) from None
    if args.tenant and code == 0 and not (args.plan or args.status):
        tenant_of_existing_rows(app, args.tenant)
    return code


def history_command(args: argparse.Namespace) -> int:
    from .data.write.history import prune
    app = app_of(args)
    retention = app.settings.history_retention
    if not retention:
        print("svc.history.retention is not set: history is kept forever, nothing pruned")
        return 0
    removed = prune(app.database, retention, args.batch_size)
    print(f"history items removed: {removed}")
    return 0


def events_command(args: argparse.Namespace) -> int:
    from .events.outbox import prune
    if args.batch_size < 1:
        raise CommandError("events prune: --batch-size must be at least 1")
    app = app_of(args)
    removed = prune(app.database, app.settings.events_retention, args.batch_size)
    print(f"events removed: {removed}")
    return 0


def deliver_command(args: argparse.Namespace) -> int:
    from .events.aftercommit import AfterCommit
    from .events.delivery import block_stop_signals, run_process
    from .events.webhooks import sync_settings
    block_stop_signals()        # before the application starts threads: they inherit it
    app = app_of(args)
    sync_settings(app.database, app.metadata, app.settings.webhooks,
                  app.settings.webhooks_allow_private)
    hooks = AfterCommit(app.settings, app.data, service_access(app, None))
    return run_process(app.settings, app.database, app.metadata, args.parent,
                       [hooks.run] if hooks.hooks else [])


def routes(args: argparse.Namespace) -> None:
    from .api import all_rules
    from .app import load_model
    from .application import import_application
    settings = load_settings(args.config)
    application = import_application(settings.application, settings.base_dir)
    load_model(application)         # a model that serve refuses has no routes either
    for rule in all_rules(application, settings):
        methods = ",".join(sorted(m for m in rule.methods if m not in ("HEAD", "OPTIONS"))
                           ) if rule.methods is not None else "ANY"
        handler = rule.endpoint
        print(f"{methods:<18} {rule.rule:<60} {handler.__module__.removeprefix('restsvc.api.')}."
              f"{handler.__name__}")


def bundle_command(args: argparse.Namespace) -> None:
    from . import bundle
    try:
        summary = bundle.build(args.output, args.config, args.extra or ())
    except (bundle.BundleError, OSError) as exc:
        raise CommandError(f"bundle: {exc}") from None
    print(f"{summary.output}: {summary.files} files, {summary.size / 1e6:.1f} MB, for Python "
          f"{'.'.join(map(str, bundle.MINIMUM_PYTHON))}+; run it: python {summary.output} serve")
    print(f"dependencies: {', '.join(summary.distributions)}")
    if summary.drivers:
        print(f"PostgreSQL driver: {', '.join(summary.drivers)}, for {summary.built_for} only "
              f"(elsewhere: install psycopg2 beside the interpreter)")
    else:
        print("PostgreSQL driver: none (install restsvc[postgres] here to bundle it, or "
              "psycopg2 beside the interpreter that runs the bundle)")
    print("the bundle holds the settings' secrets: keep it private (it is made owner-only)")


def new_command(args: argparse.Namespace) -> None:
    from . import starter
    try:
        made = starter.create(args.directory, args.module)
    except (starter.StarterError, OSError) as exc:
        raise CommandError(f"new: {exc}") from None
    config = made.directory / "restsvc.yaml"
    print(f"new application in {made.directory.resolve()}")
    print(f"created {', '.join(str(path) for path in made.files)}")
    print(f"client id:     {made.client_id}")
    print(f"client secret: {made.client_secret}   (shown this once; restsvc.yaml keeps its hash)")
    print(f"serve it:      restsvc --config {config} serve")


def _read_secret(prompt: str, from_stdin: bool = False, confirm: bool = False) -> str:
    """A secret from stdin (one line) or typed at the terminal; never echoed."""
    if from_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    secret = getpass.getpass(prompt)
    if confirm and getpass.getpass("again: ") != secret:
        raise CommandError("the two entries differ")
    return secret


def hash_secret_command(args: argparse.Namespace) -> None:
    from .security.clients import hash_secret
    secret = args.secret
    if secret is None:
        secret = _read_secret("secret: ")
    if not secret:
        raise SettingsError("hash-secret: the secret is empty")
    print(hash_secret(secret))


def user_command(args: argparse.Namespace) -> None:
    """Every change goes through the same User hooks as a REST change, so
    disabling a user (or a new password) revokes its tokens at once."""
    from . import db
    app = app_of(args)
    try:
        if args.action == "add":
            password = _read_secret("password: ", args.password_stdin, confirm=True)
            app.users.add(args.username, password, tuple(args.role or ()), args.tenant)
            print(f"user {args.username} added" + (f" to tenant {args.tenant}" if args.tenant
                                                    else ""))
        elif args.action == "passwd":
            app.users.set_password(args.username, _read_secret(
                "new password: ", args.password_stdin, confirm=True))
            print(f"password of {args.username} changed; its tokens and API keys are revoked")
        elif args.action == "roles":
            app.users.set_roles(args.username, tuple(args.codes))
            print(f"roles of {args.username}: {', '.join(args.codes) or '(none)'}; "
                  f"its tokens are revoked")
        elif args.action == "disable":
            app.users.set_active(args.username, False)
            print(f"user {args.username} disabled; its tokens and API keys are revoked")
        else:
            app.users.set_active(args.username, True)
            print(f"user {args.username} enabled")
    finally:
        db.release(app.database)


def main(argv: Sequence[str] | None = None) -> int:
    from . import gunicorn_config as defaults
    parser = argparse.ArgumentParser(prog="restsvc", description="restsvc REST service")
    parser.add_argument("--config", help="settings file (default: $RESTSVC_CONFIG or "
                                         "config/restsvc.yaml)")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser(
        "serve", help="run the service under gunicorn",
        description=f"Run the service under gunicorn. The same application under a "
                    f"gunicorn (or any WSGI server) started by hand, from any folder: "
                    f"{WSGI_COMMAND} (settings from $RESTSVC_CONFIG, default "
                    f"config/restsvc.yaml); an embedding host calls restsvc.createapp_of().")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=defaults.workers)
    p.add_argument("--threads", type=int, default=defaults.threads,
                   help="threads per worker: each serves one request, slow clients included")
    p.add_argument("--timeout", type=int, default=defaults.timeout,
                   help="seconds before a worker that stopped answering is restarted")
    p.add_argument("--graceful-timeout", type=int, default=defaults.graceful_timeout,
                   help="seconds the requests in flight get to finish when stopping")
    p.add_argument("--drain", type=float, default=defaults.drain_seconds, metavar="SECONDS",
                   help="on SIGTERM, report not ready and keep serving this long before "
                        "stopping (default: $RESTSVC_DRAIN_SECONDS or 10; 0: stop at once)")
    p.add_argument("--control-socket", metavar="PATH",
                   help="gunicorn's control socket for gunicornc, one path per instance "
                        "(default: none)")
    p.add_argument("--access-log", action="store_true", help="log every request to stdout")
    p.set_defaults(run=serve)

    commands.add_parser("initdb", help="create missing tables").set_defaults(run=initdb)
    commands.add_parser("demo-data", help="create tables and load the demo data if empty") \
        .set_defaults(run=demo_data)
    p = commands.add_parser("migrate", help="bring the database to the model (restsvc/docs/"
                                            "model.md \"Changing the model\")")
    p.add_argument("--plan", action="store_true", help="print the steps and their SQL; "
                                                      "change nothing")
    p.add_argument("--status", action="store_true", help="applied migrations, pending steps")
    p.add_argument("--allow-destructive", action="store_true",
                   help="also drop, narrow, make required, change foreign keys")
    p.add_argument("--lock-timeout", type=float, default=30, metavar="SECONDS",
                   help="wait at most this long for the database's locks (default: 30)")
    p.add_argument("--no-backup", action="store_true",
                   help="SQLite: no backup copy before a table rebuild")
    p.add_argument("--tenant", metavar="KEY", help="the tenant existing rows of newly "
                   "tenant-scoped entities belong to (restsvc/docs/tenants.md)")
    p.set_defaults(run=migrate_command)
    add_data_commands(commands)
    commands.add_parser("routes", help="print the URL table").set_defaults(run=routes)
    p = commands.add_parser("bundle", help="one file with the application, its settings and "
                                           "dependencies: python FILE serve (restsvc/docs/"
                                           "operations.md \"One-file deployment\")")
    p.add_argument("--output", required=True, metavar="FILE", help="the file to write")
    p.add_argument("--extra", action="append", metavar="NAME",
                   help="also carry an installed restsvc extra: docs, jwt, otel, s3 "
                        "(repeatable; postgres goes along whenever installed)")
    p.set_defaults(run=bundle_command)
    p = commands.add_parser("new", help="start an application of your own in a new folder "
                                        "(README.md \"First ten minutes\")")
    p.add_argument("directory", metavar="DIR", help="the folder to create (new or empty)")
    p.add_argument("--module", help="its Python module's name (default: <DIR's name>_app)")
    p.set_defaults(run=new_command)
    for name, run, help_text in (
            ("history", history_command,
             "the entity log: prune removes items older than svc.history.retention"),
            ("events", events_command,
             "change events: prune removes events older than svc.events.retention "
             "(the delivery worker does it too)")):
        p = commands.add_parser(name, help=help_text)
        p.add_argument("action", choices=("prune",))
        p.add_argument("--batch-size", type=int, default=1000, metavar="ROWS",
                       help="rows removed per transaction (default: 1000)")
        p.set_defaults(run=run)
    p = commands.add_parser("deliver", help="the webhook delivery worker, which runs after-commit "
                                            "hooks too (restsvc serve starts one unless "
                                            "svc.webhooks.deliver-in-serve is false)")
    p.add_argument("--parent", type=int, help=argparse.SUPPRESS)    # stop when it is gone
    p.set_defaults(run=deliver_command)
    p = commands.add_parser("hash-secret", help="hash a client secret for the settings")
    p.add_argument("secret", nargs="?", help="the secret (read from stdin when omitted)")
    p.set_defaults(run=hash_secret_command)

    p = commands.add_parser("user", help="manage users: add, passwd, roles, disable, enable")
    actions = p.add_subparsers(dest="action", required=True)
    for action, help_text in (("add", "create a user (asks for the password)"),
                              ("passwd", "set a new password; ends the user's sign-ins "
                                         "and API keys"),
                              ("roles", "replace the user's role codes; ends its sign-ins"),
                              ("disable", "stop a user signing in; revokes its tokens "
                                          "and API keys"),
                              ("enable", "let a disabled user sign in again")):
        a = actions.add_parser(action, help=help_text)
        a.add_argument("username")
        if action in ("add", "passwd"):
            a.add_argument("--password-stdin", action="store_true",
                           help="read the password as one line from stdin")
        if action == "add":
            a.add_argument("--role", action="append", metavar="CODE",
                           help="a resource or row-level role code (repeatable)")
            a.add_argument("--tenant", metavar="KEY", help="the user's tenant (default: "
                           "none, a global user; restsvc/docs/tenants.md)")
        if action == "roles":
            a.add_argument("codes", nargs="*", metavar="CODE",
                           help="resource and row-level role codes (none: no roles)")
    p.set_defaults(run=user_command)
    add_key_commands(commands)
    add_tenant_commands(commands)

    args = parser.parse_args(argv)
    from .schema import MigrationError, SchemaMismatch
    try:
        code: int | None = args.run(args)
    except (SchemaMismatch, MigrationError) as exc:
        print(f"restsvc: {exc}", file=sys.stderr)
        return 1
    except SettingsError as exc:
        print(f"restsvc: configuration error: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"restsvc: {exc.error}: {exc.details}", file=sys.stderr)
        return 1
    except CommandError as exc:
        print(f"restsvc: {exc}", file=sys.stderr)
        return 1
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
