"""Messages API: localized captions of entities and enums. They follow the
caller's language (Accept-Language, else its own locale), so no cache keeps them."""
from collections.abc import Iterable
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..web import NO_STORE, json_response
from .metadata import find_entity, find_enum

if TYPE_CHECKING:
    from ..web import Context


def _merged(bundles: Iterable[dict[str, str]]) -> Response:
    body: dict[str, str] = {}
    for bundle in bundles:
        body.update(bundle)
    return json_response(dict(sorted(body.items())), headers=NO_STORE)


def entity_messages(ctx: "Context") -> Response:
    return _merged(ctx.app.messages.entity_messages(meta, ctx.locale)
                   for meta in ctx.app.metadata.entities.values())


def one_entity_messages(ctx: "Context", entity_name: str) -> Response:
    return json_response(ctx.app.messages.entity_messages(find_entity(ctx, entity_name), ctx.locale),
                         headers=NO_STORE)


def enum_messages(ctx: "Context") -> Response:
    return _merged(ctx.app.messages.enum_messages(meta_enum, ctx.locale)
                   for meta_enum in ctx.app.metadata.enums.values())


def one_enum_messages(ctx: "Context", enum_name: str) -> Response:
    return json_response(ctx.app.messages.enum_messages(find_enum(ctx, enum_name), ctx.locale),
                         headers=NO_STORE)


rules = [
    Rule("/rest/messages/entities", methods=["GET"], endpoint=entity_messages),
    Rule("/rest/messages/entities/<entity_name>", methods=["GET"], endpoint=one_entity_messages),
    Rule("/rest/messages/enums", methods=["GET"], endpoint=enum_messages),
    Rule("/rest/messages/enums/<enum_name>", methods=["GET"], endpoint=one_enum_messages),
]
