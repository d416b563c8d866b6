"""``restsvc tenant add | disable | enable | list`` and what ``restsvc
migrate --tenant KEY`` adds to a migration (restsvc/docs/tenants.md)."""
import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .clibase import app_of

if TYPE_CHECKING:
    from .app import RestApp


def tenant_command(args: argparse.Namespace) -> int:
    from . import db
    app = app_of(args)
    try:
        if args.action == "list":
            for tenant in app.tenants.listed():
                print(f"{tenant.tenantId}  {tenant.name}  "
                      f"{'enabled' if tenant.enabled else 'disabled'}")
        elif args.action == "add":
            tenant = app.tenants.add(args.key, args.name)
            print(f"tenant {tenant.tenantId} ({tenant.name}) added")
        else:
            app.tenants.set_enabled(args.key, args.action == "enable")
            print(f"tenant {args.key} {args.action}d" + (
                "; its callers' tokens stop working within a second"
                if args.action == "disable" else ""))
        return 0
    finally:
        db.release(app.database)


@contextmanager
def existing_rows_tenant(app: "RestApp", key: str | None) -> Iterator[None]:
    """``migrate --tenant KEY``: while it lasts, the tenant columns a
    migration adds get KEY as their default, so every existing row belongs to
    that tenant (the Tenant row itself is added by ``tenant_of_existing_rows``
    once the tables exist). The model is as declared again afterwards."""
    from .model.tenancy import TENANT_ATTRIBUTE
    from .security.tenants import checked_key
    fields: list[Any] = []
    if key is not None:
        checked_key(key)
        fields = [field for meta in app.metadata.entities.values() if meta.tenant
                  for field in [meta.model._meta.fields[TENANT_ATTRIBUTE]]
                  if not field.null and not field.unique and field.default is None]
    for field in fields:
        field.default = key
    try:
        yield
    finally:
        for field in fields:
            field.default = None


def tenant_of_existing_rows(app: "RestApp", key: str) -> None:
    """The tenant ``migrate --tenant KEY`` put the existing rows in, added when missing."""
    from .security.tenants import Tenant
    if not Tenant.select().where(Tenant.tenantId == key).exists():
        app.tenants.add(key)
        print(f"tenant {key} added: the existing rows belong to it")


def add_tenant_commands(commands: Any) -> None:
    """The tenant commands' parsers, in ``restsvc``'s sub-commands."""
    p = commands.add_parser("tenant", help="tenants: add, disable, enable, list "
                                           "(restsvc/docs/tenants.md)")
    actions = p.add_subparsers(dest="action", required=True)
    a = actions.add_parser("add", help="add a tenant")
    a.add_argument("key", help="its key: what tenantId columns hold (letters, digits, _ . -)")
    a.add_argument("--name", help="its name (default: the key)")
    for action, help_text in (("disable", "stop the tenant's callers: their tokens stop "
                                          "working within a second"),
                              ("enable", "let a disabled tenant's callers in again")):
        actions.add_parser(action, help=help_text).add_argument("key")
    actions.add_parser("list", help="every tenant, enabled or not")
    p.set_defaults(run=tenant_command)
