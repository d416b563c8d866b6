"""Metadata API: entities, fetch plans and enums.

What a caller is shown follows its permissions, as the Services API does:
entities it may not read are left out (asked for by name: 403 ``Reading
forbidden``, as the Entities API answers), and so are the attributes of an
entity it may not read and the enums only those attributes use. The answers
therefore depend on the caller and are never kept by a cache. A path opened
without a token on purpose (svc.resource-server.anonymous-url-patterns)
describes the whole model to a caller without one: the deployment publishes it.
"""
import importlib.metadata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..data.access import require
from ..errors import NotFound, entity_name_not_found
from ..model.datatypes import DATATYPES, FORMATS
from ..web import NO_STORE, json_response

if TYPE_CHECKING:
    from ..model.metadata import MetaClass, MetaEnum
    from ..security.roles import Permissions
    from ..web import Context


def find_entity(ctx: "Context", entity_name: str) -> "MetaClass":
    meta = ctx.app.metadata.described(entity_name)     # entities and embedded value types
    if meta is None:
        raise entity_name_not_found(entity_name)
    return meta


def find_enum(ctx: "Context", enum_name: str) -> "MetaEnum":
    meta_enum = ctx.app.metadata.enums.get(enum_name)
    if meta_enum is None:
        raise NotFound("Enum not found", f"Enum with class name {enum_name} not found")
    return meta_enum


def viewer(ctx: "Context") -> "Permissions | None":
    """The permissions the caller-facing metadata follows, or None for the
    whole model (a caller without a token on a path opened on purpose)."""
    return None if ctx.principal is ctx.app.gate.anonymous_principal else ctx.permissions


def readable_entity(ctx: "Context", entity_name: str) -> "MetaClass":
    """The entity, 404 when there is none, 403 when the caller may not read it."""
    meta = find_entity(ctx, entity_name)
    permissions = viewer(ctx)
    if permissions is None:
        return meta
    if not meta.is_embedded:
        require(ctx.access, meta, "read")
    elif not permissions.reads_value_type(ctx.app.metadata, meta.name):
        raise entity_name_not_found(entity_name)
    return meta


def _entity_json(ctx: "Context", meta: "MetaClass",
                 captions: Callable[[str], str]) -> dict[str, Any]:
    permissions = viewer(ctx)
    return meta.to_json(captions, None if permissions is None
                        else permissions.readable_properties(meta))


def list_entities(ctx: "Context") -> Response:
    captions = ctx.app.messages.captions(ctx.locale)
    permissions = viewer(ctx)
    return json_response([_entity_json(ctx, meta, captions)
                          for meta in ctx.app.metadata.entities.values()
                          if permissions is None or permissions.can(meta.name, "read")],
                         headers=NO_STORE)


def get_entity(ctx: "Context", entity_name: str) -> Response:
    meta = readable_entity(ctx, entity_name)
    return json_response(_entity_json(ctx, meta, ctx.app.messages.captions(ctx.locale)),
                         headers=NO_STORE)


def list_fetch_plans(ctx: "Context", entity_name: str) -> Response:
    plans = readable_entity(ctx, entity_name).fetch_plans
    return json_response([plan.to_json() for name, plan in plans.items() if not name.startswith("_")],
                         headers=NO_STORE)


def get_fetch_plan(ctx: "Context", entity_name: str, plan_name: str) -> Response:
    meta = readable_entity(ctx, entity_name)
    plan = meta.fetch_plans.get(plan_name)
    if plan is None:
        raise NotFound("Fetch plan not found",
                       f"Fetch plan {plan_name} for metaClass {entity_name} not found")
    return json_response(plan.to_json(), headers=NO_STORE)


def _visible_enums(ctx: "Context") -> "Iterable[MetaEnum]":
    permissions = viewer(ctx)
    metadata = ctx.app.metadata
    return metadata.enums.values() if permissions is None else permissions.visible_enums(metadata)


def list_enums(ctx: "Context") -> Response:
    captions = ctx.app.messages.captions(ctx.locale)
    return json_response([e.to_json(captions) for e in _visible_enums(ctx)], headers=NO_STORE)


def get_enum(ctx: "Context", enum_name: str) -> Response:
    meta_enum = find_enum(ctx, enum_name)
    if meta_enum not in _visible_enums(ctx):
        raise NotFound("Enum not found", f"Enum with class name {enum_name} not found")
    return json_response(meta_enum.to_json(ctx.app.messages.captions(ctx.locale)),
                         headers=NO_STORE)


def list_datatypes(ctx: "Context") -> Response:
    return json_response([{"id": name, "name": name, **FORMATS.get(name, {})} for name in DATATYPES])


def _package_version() -> str:
    try:
        return importlib.metadata.version("restsvc")
    except importlib.metadata.PackageNotFoundError:     # run from a source tree, not installed
        return "0+unknown"


PACKAGE_VERSION = _package_version()


def version(ctx: "Context") -> Response:
    """The versions of restsvc and of the application (null when it declares none)."""
    return json_response({"restsvc": PACKAGE_VERSION, "application": ctx.app.application.version})


def capabilities(ctx: "Context") -> Response:
    """What optional features clients may use (reference 6.8)."""
    return json_response({"inlineFetchPlans": ctx.app.settings.inline_fetch_plans})


rules = [
    Rule("/rest/metadata/entities", methods=["GET"], endpoint=list_entities),
    Rule("/rest/metadata/entities/<entity_name>", methods=["GET"], endpoint=get_entity),
    Rule("/rest/metadata/entities/<entity_name>/fetchPlans", methods=["GET"],
         endpoint=list_fetch_plans),
    Rule("/rest/metadata/entities/<entity_name>/fetchPlans/<plan_name>", methods=["GET"],
         endpoint=get_fetch_plan),
    # The deprecated names the reference still serves (the vendor's JS client uses them).
    Rule("/rest/metadata/entities/<entity_name>/views", methods=["GET"],
         endpoint=list_fetch_plans),
    Rule("/rest/metadata/entities/<entity_name>/views/<plan_name>", methods=["GET"],
         endpoint=get_fetch_plan),
    Rule("/rest/metadata/enums", methods=["GET"], endpoint=list_enums),
    Rule("/rest/metadata/enums/<enum_name>", methods=["GET"], endpoint=get_enum),
    Rule("/rest/metadata/datatypes", methods=["GET"], endpoint=list_datatypes),
    Rule("/rest/capabilities", methods=["GET"], endpoint=capabilities),
    Rule("/rest/version", methods=["GET"], endpoint=version),
]
