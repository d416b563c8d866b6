"""Webhook subscriptions over HTTP (restsvc/events/webhooks.py, delivery.py),
under the grant ``rest.webhooks``; a secret is never answered."""
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import read_json_body
from ..errors import Forbidden
from ..events import visibility, webhooks
from ..security.scopes import ACTIONS, checks
from ..web import NO_STORE, Context, empty_response, json_response, location_url

_MAX_BODY = 16 << 10
REGISTER, READ = "rest.webhooks.register", "rest.webhooks.read"
DELETE, REPLAY = "rest.webhooks.delete", "rest.webhooks.replay"


def _require_grant(ctx: Context, action: str) -> None:
    """403 unless the caller's roles give ``rest.webhooks`` and its token's
    scopes keep ``action`` (security/scopes.py)."""
    if not ctx.permissions.specific(action):
        needs = " and ".join(sorted(ACTIONS[action].needs))
        raise Forbidden("Forbidden", f"This needs the grant {webhooks.GRANT} and, for a "
                                     f"token with scopes, the scope {needs}")


@checks(REGISTER)
def register(ctx: Context) -> Response:
    _require_grant(ctx, REGISTER)
    wanted = webhooks.checked(
        ctx.app.metadata, read_json_body(ctx.request, max_bytes=_MAX_BODY),
        ctx.app.settings.webhooks_allow_private)
    visibility.check_subscription(ctx.permissions, ctx.app.metadata, wanted.entities,
                                  wanted.kinds, ctx.access.tenant)
    webhooks.check_filter(ctx.app.metadata, wanted, ctx.permissions)
    row = webhooks.create(ctx.app.database, wanted, tenant=ctx.access.tenant)
    location = location_url(ctx.request, ctx.app.settings.public_url) + "/" + row.id
    return json_response(webhooks.as_json(row), status=201,
                         headers={**NO_STORE, "Location": location})


def _seen(ctx: Context, row: webhooks.WebhookSubscription) -> dict[str, Any]:
    """The subscription as the caller may see it (403 when it may not)."""
    shown = webhooks.as_json(row)
    visibility.check_subscription(ctx.permissions, ctx.app.metadata, shown["entities"],
                                  shown["kinds"], ctx.access.tenant)
    return shown


def _find(ctx: Context, webhook_id: str) -> webhooks.WebhookSubscription:
    """The subscription; another tenant's answers as a missing one (events/webhooks.py)."""
    return webhooks.find(webhook_id, ctx.access.tenant)


@checks(READ)
def list_all(ctx: Context) -> Response:
    _require_grant(ctx, READ)
    shown = (webhooks.as_json(row) for row in webhooks.listed(ctx.access.tenant))
    return json_response([hook for hook in shown if visibility.subscription_refusal(
        ctx.permissions, ctx.app.metadata, hook["entities"], hook["kinds"],
        ctx.access.tenant) is None],
        headers=NO_STORE)


@checks(READ)
def read_one(ctx: Context, webhook_id: str) -> Response:
    _require_grant(ctx, READ)
    return json_response(_seen(ctx, _find(ctx, webhook_id)), headers=NO_STORE)


@checks(DELETE)
def delete(ctx: Context, webhook_id: str) -> Response:
    _require_grant(ctx, DELETE)
    webhooks.delete(webhook_id, ctx.access.tenant)
    return empty_response(204)


@checks(READ)
def dead_letters(ctx: Context, webhook_id: str) -> Response:
    _require_grant(ctx, READ)
    _seen(ctx, _find(ctx, webhook_id))
    return json_response(webhooks.dead_letters(webhook_id), headers=NO_STORE)


@checks(REPLAY)
def replay(ctx: Context, webhook_id: str) -> Response:
    _require_grant(ctx, REPLAY)
    _find(ctx, webhook_id)
    return json_response({"replayed": webhooks.replay(webhook_id)}, headers=NO_STORE)


rules = [
    Rule("/rest/webhooks", methods=["POST"], endpoint=register),
    Rule("/rest/webhooks", methods=["GET"], endpoint=list_all),
    Rule("/rest/webhooks/<webhook_id>", methods=["GET"], endpoint=read_one),
    Rule("/rest/webhooks/<webhook_id>", methods=["DELETE"], endpoint=delete),
    Rule("/rest/webhooks/<webhook_id>/dead-letters", methods=["GET"], endpoint=dead_letters),
    Rule("/rest/webhooks/<webhook_id>/dead-letters/replay", methods=["POST"], endpoint=replay),
]
