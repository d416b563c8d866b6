"""``restsvc key create | list | revoke``: API keys from the command line,
as the operator (no grant needed; restsvc/docs/apikeys.md "From the command line")."""
import argparse
from typing import TYPE_CHECKING, Any

from .clibase import CommandError, app_of

if TYPE_CHECKING:
    from .app import RestApp
    from .security.apikeys import Owner

COMMAND_USER = "restsvc key"         # createdBy of a key made here


def _owner(app: "RestApp", args: argparse.Namespace) -> "Owner":
    from .security.keygrants import named_owner
    if (args.user is None) == (args.client is None):
        raise CommandError("key: name the owner with --user USERNAME or --client CLIENT_ID")
    return named_owner(app.clients, args.user, args.client)


def key_command(args: argparse.Namespace) -> int:
    from . import db
    from .security.apikeys import as_json, checked_lifetime, checked_name, checked_scope
    app = app_of(args)
    try:
        if args.action == "revoke":
            row = app.keys.find(args.key_id)
            if row is None:
                raise CommandError(f"key revoke: no API key {args.key_id}")
            app.keys.revoke(row)
            print(f"API key {row.id} ({row.name}) revoked")
            return 0
        owner = _owner(app, args)
        if args.action == "list":
            for shown in (as_json(row, owner) for row in app.keys.listed(owner)):
                print(f"{shown['id']}  {shown['name']}  scope: {shown['scope'] or '(roles)'}  "
                      f"expires: {shown['expiresAt'] or 'never'}  "
                      f"last used: {shown['lastUsedAt'] or 'never'}")
            return 0
        client = app.clients.get(owner.client_id) if owner.client_id else None
        row, secret = app.keys.create(
            owner, checked_name(args.name), checked_scope(
                args.scope, None, client.scopes if client is not None else ()),
            checked_lifetime(args.expires), COMMAND_USER)
        print(f"API key {row.id} of {owner.label}")
        print(f"key: {secret}   (shown this once; send it as Authorization: Bearer <key>)")
        return 0
    finally:
        db.release(app.database)


def add_key_commands(commands: Any) -> None:
    """The key commands' parsers, in ``restsvc``'s sub-commands."""
    p = commands.add_parser("key", help="API keys of users and clients: create, list, revoke")
    actions = p.add_subparsers(dest="action", required=True)
    for action, help_text in (("create", "make a key; its secret is printed this once"),
                              ("list", "the keys of a user or client (never their secrets)")):
        a = actions.add_parser(action, help=help_text)
        a.add_argument("--user", metavar="USERNAME", help="a user's keys")
        a.add_argument("--client", metavar="CLIENT_ID", help="a registered client's keys")
        if action == "create":
            a.add_argument("--name", required=True, help="what the key is for")
            a.add_argument("--expires", metavar="DURATION",
                           help="lifetime such as 90d or 12h (default: until revoked)")
            a.add_argument("--scope", help='"read", "write" or "read write" (default: the '
                                           "owner's roles alone, or a client's scopes)")
    a = actions.add_parser("revoke", help="end a key at once")
    a.add_argument("key_id", metavar="KEY_ID")
    p.set_defaults(run=key_command)
