"""``restsvc serve | initdb | demo-data | routes | hash-secret``."""
import argparse
import getpass
import sys

from .settings import SettingsError, load_settings


def _app(args, init_schema=None):
    from .app import RestApp
    settings = load_settings(args.config)
    if init_schema is not None:
        from dataclasses import replace
        settings = replace(settings, init_schema=init_schema)
    return RestApp(settings)


def serve(args):
    from gunicorn.app.base import BaseApplication

    # Schema and demo data are prepared once here, before the workers fork.
    _app(args)

    class Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"{args.host}:{args.port}")
            self.cfg.set("workers", args.workers)
            self.cfg.set("threads", args.threads)
            self.cfg.set("timeout", args.timeout)
            self.cfg.set("accesslog", "-" if args.access_log else None)

        def load(self):
            return _app(args)

    Server().run()


def initdb(args):
    app = _app(args, init_schema=False)
    app.init_schema(demo_data=False)
    print(f"schema ready: {app.settings.database_url}")


def demo_data(args):
    app = _app(args, init_schema=False)
    app.init_schema(demo_data=True)
    print("demo data ready")


def routes(args):
    from .api import API_MODULES
    for module in API_MODULES:
        for rule in module.rules:
            methods = ",".join(sorted(m for m in rule.methods if m not in ("HEAD", "OPTIONS")))
            print(f"{methods:<18} {rule.rule:<60} {module.__name__.rsplit('.', 1)[-1]}."
                  f"{rule.endpoint.__name__}")


def hash_secret_command(args):
    from .security.clients import hash_secret
    secret = args.secret
    if secret is None:
        secret = getpass.getpass("secret: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if not secret:
        raise SettingsError("hash-secret: the secret is empty")
    print(hash_secret(secret))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="restsvc", description="restsvc REST service")
    parser.add_argument("--config", help="settings file (default: $RESTSVC_CONFIG or "
                                         "config/restsvc.yaml)")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("serve", help="run the service under gunicorn")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=int, default=60)
    p.add_argument("--access-log", action="store_true", help="log every request to stdout")
    p.set_defaults(run=serve)

    commands.add_parser("initdb", help="create missing tables").set_defaults(run=initdb)
    commands.add_parser("demo-data", help="create tables and load the demo data if empty") \
        .set_defaults(run=demo_data)
    commands.add_parser("routes", help="print the URL table").set_defaults(run=routes)
    p = commands.add_parser("hash-secret", help="hash a client secret for the settings")
    p.add_argument("secret", nargs="?", help="the secret (read from stdin when omitted)")
    p.set_defaults(run=hash_secret_command)

    args = parser.parse_args(argv)
    try:
        args.run(args)
    except SettingsError as exc:
        print(f"restsvc: configuration error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
