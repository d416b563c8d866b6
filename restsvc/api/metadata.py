"""Metadata API: entities, fetch plans and enums."""
from werkzeug.routing import Rule

from ..errors import NotFound
from ..model.datatypes import DATATYPES, FORMATS
from ..web import json_response


def find_entity(ctx, entity_name):
    meta = ctx.app.metadata.described(entity_name)     # entities and embedded value types
    if meta is None:
        raise NotFound("Entity not found", f"Entity {entity_name} not found")
    return meta


def find_enum(ctx, enum_name):
    meta_enum = ctx.app.metadata.enums.get(enum_name)
    if meta_enum is None:
        raise NotFound("Enum not found", f"Enum with class name {enum_name} not found")
    return meta_enum


def list_entities(ctx):
    captions = ctx.app.messages.captions(ctx.locale)
    return json_response([meta.to_json(captions) for meta in ctx.app.metadata.entities.values()])


def get_entity(ctx, entity_name):
    return json_response(find_entity(ctx, entity_name).to_json(ctx.app.messages.captions(ctx.locale)))


def list_fetch_plans(ctx, entity_name):
    plans = find_entity(ctx, entity_name).fetch_plans
    return json_response([plan.to_json() for name, plan in plans.items() if not name.startswith("_")])


def get_fetch_plan(ctx, entity_name, plan_name):
    meta = find_entity(ctx, entity_name)
    plan = meta.fetch_plans.get(plan_name)
    if plan is None:
        raise NotFound("Fetch plan not found",
                       f"Fetch plan {plan_name} for metaClass {entity_name} not found")
    return json_response(plan.to_json())


def list_enums(ctx):
    captions = ctx.app.messages.captions(ctx.locale)
    return json_response([e.to_json(captions) for e in ctx.app.metadata.enums.values()])


def get_enum(ctx, enum_name):
    return json_response(find_enum(ctx, enum_name).to_json(ctx.app.messages.captions(ctx.locale)))


def list_datatypes(ctx):
    return json_response([{"id": name, "name": name, **FORMATS.get(name, {})} for name in DATATYPES])


def capabilities(ctx):
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
]
