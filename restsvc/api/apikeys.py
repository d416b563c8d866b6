"""API keys over HTTP (restsvc/security/apikeys.py; who may do what:
security/keygrants.py). A key's secret is answered once, by the request that
makes it; no other answer shows it."""
from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..bodies import read_json_body
from ..errors import BadRequest
from ..security import keygrants
from ..security.apikeys import KeyStore, as_json
from ..security.scopes import checks
from ..web import NO_STORE, Context, empty_response, json_response, location_url

_MAX_BODY = 4 << 10


@checks(keygrants.CREATE)
def create(ctx: Context) -> Response:
    body = read_json_body(ctx.request, max_bytes=_MAX_BODY)
    if not isinstance(body, dict):
        raise BadRequest("Invalid API key", "The body must be a JSON object")
    asked = keygrants.creation(ctx.principal, ctx.app.clients, body)
    row, secret = ctx.app.keys.create(asked.owner, asked.name, asked.scope, asked.lifetime,
                                      asked.created_by)
    location = location_url(ctx.request, ctx.app.settings.public_url) + "/" + row.id
    return json_response({**as_json(row, asked.owner), "key": secret}, status=201,
                         headers={**NO_STORE, "Location": location})


@checks(keygrants.READ)
def list_keys(ctx: Context) -> Response:
    args = ctx.request.args
    owner = keygrants.listing_owner(ctx.principal, ctx.app.clients,
                                    args.get("username") or None, args.get("clientId") or None)
    return json_response([as_json(row, owner) for row in ctx.app.keys.listed(owner)],
                         headers=NO_STORE)


@checks(keygrants.READ)
def read_key(ctx: Context, key_id: str) -> Response:
    row = keygrants.check_key(ctx.principal, ctx.app.clients, ctx.app.keys.find(key_id), keygrants.READ,
                              keygrants.MANAGE_READ)
    return json_response(as_json(row, KeyStore.owner(row)), headers=NO_STORE)


@checks(keygrants.DELETE)
def revoke(ctx: Context, key_id: str) -> Response:
    row = keygrants.check_key(ctx.principal, ctx.app.clients, ctx.app.keys.find(key_id), keygrants.DELETE,
                              keygrants.MANAGE_WRITE)
    ctx.app.keys.revoke(row)
    return empty_response(204)


rules = [
    Rule("/rest/api-keys", methods=["POST"], endpoint=create),
    Rule("/rest/api-keys", methods=["GET"], endpoint=list_keys),
    Rule("/rest/api-keys/<key_id>", methods=["GET"], endpoint=read_key),
    Rule("/rest/api-keys/<key_id>", methods=["DELETE"], endpoint=revoke),
]
