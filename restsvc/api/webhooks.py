"""Webhook subscriptions over HTTP (restsvc/events/webhooks.py, delivery.py),
under the grant ``rest.webhooks``; a secret is never answered."""
from werkzeug.routing import Rule

from ..bodies import read_json_body
from ..errors import Forbidden
from ..events import delivery, visibility, webhooks
from ..web import NO_STORE, empty_response, json_response, location_url

_MAX_BODY = 16 << 10


def _require_grant(ctx):
    if not ctx.permissions.specific(webhooks.GRANT):
        raise Forbidden("Forbidden", f"Webhooks need the grant {webhooks.GRANT}")


def register(ctx):
    _require_grant(ctx)
    url, entities, kinds, secret = webhooks.checked(
        ctx.app.metadata, read_json_body(ctx.request, max_bytes=_MAX_BODY),
        ctx.app.settings.webhooks_allow_private)
    visibility.check_subscription(ctx.permissions, ctx.app.metadata, entities, kinds)
    row = webhooks.create(ctx.app.database, url, entities, kinds, secret)
    location = location_url(ctx.request, ctx.app.settings.public_url) + "/" + row.id
    return json_response(webhooks.as_json(row), status=201,
                         headers={**NO_STORE, "Location": location})


def _seen(ctx, row):
    """The subscription as the caller may see it (403 when it may not)."""
    shown = webhooks.as_json(row)
    visibility.check_subscription(ctx.permissions, ctx.app.metadata, shown["entities"],
                                  shown["kinds"])
    return shown


def list_all(ctx):
    _require_grant(ctx)
    shown = (webhooks.as_json(row) for row in webhooks.listed())
    return json_response([hook for hook in shown if visibility.subscription_refusal(
        ctx.permissions, ctx.app.metadata, hook["entities"], hook["kinds"]) is None],
        headers=NO_STORE)


def read_one(ctx, webhook_id):
    _require_grant(ctx)
    return json_response(_seen(ctx, webhooks.find(webhook_id)), headers=NO_STORE)


def delete(ctx, webhook_id):
    _require_grant(ctx)
    webhooks.delete(webhook_id)
    return empty_response(204)


def dead_letters(ctx, webhook_id):
    _require_grant(ctx)
    _seen(ctx, webhooks.find(webhook_id))
    return json_response(delivery.dead_letters(webhook_id), headers=NO_STORE)


def replay(ctx, webhook_id):
    _require_grant(ctx)
    webhooks.find(webhook_id)
    return json_response({"replayed": delivery.replay(webhook_id)}, headers=NO_STORE)


rules = [
    Rule("/rest/webhooks", methods=["POST"], endpoint=register),
    Rule("/rest/webhooks", methods=["GET"], endpoint=list_all),
    Rule("/rest/webhooks/<webhook_id>", methods=["GET"], endpoint=read_one),
    Rule("/rest/webhooks/<webhook_id>", methods=["DELETE"], endpoint=delete),
    Rule("/rest/webhooks/<webhook_id>/dead-letters", methods=["GET"], endpoint=dead_letters),
    Rule("/rest/webhooks/<webhook_id>/dead-letters/replay", methods=["POST"], endpoint=replay),
]
