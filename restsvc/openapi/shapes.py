"""The shapes an operation is written with: generic (``{entityName}``), or
those of one entity (``entity_<name>`` schemas) or one predefined query."""
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..data.read.queries import Query, QueryParam
from ..data.read.textsearch import MAX_TEXT, MAX_WORDS
from ..jsonio import JsonObject
from ..model.fetchplan import BUILT_IN
from ..model.metadata import MetaClass
from ..model.valuetypes import ArrayType, EntityIdType
from ..settings import Settings
from .schemas import (BOOLEAN, STRING, array, id_schema, named_enum, nullable, ref,
                      reference_schema_name)


@dataclass
class Typing:
    tag: str
    label: str                          # "entities", "Customer entities"
    one: str                            # "entity", "Customer"
    entity: JsonObject                  # an entity as the API writes it
    entity_create: JsonObject           # one element of a create body
    entity_update: JsonObject           # an update body
    entity_update_with_id: JsonObject
    fetch_plan: JsonObject              # the fetchPlan query parameter
    fetch_plan_body: JsonObject         # fetchPlan in a search body
    fetch_plan_text: str
    max_limit: int
    unknown_entity: bool       # 404 when the path names no entity
    query_tag: str = "Queries"
    query_label: str = "a predefined query"
    query_fetch_plan: JsonObject = field(default_factory=lambda: dict(STRING))
    query_parameters: list[JsonObject] = field(default_factory=list)
    query_body: JsonObject = field(default_factory=lambda: {"type": "object"})
    query_body_required: bool = False
    unknown_query: bool = True
    # A bulk delete's body: ids, or objects with an id
    entity_ids: JsonObject = field(default_factory=lambda: ref("entityIds"))
    max_change_rows: int = 1000     # svc.rest.max-change-rows: maxRows of changes by filter
    searchable: bool = True     # a ranked full-text search (q) may find entities

    @property
    def search_hit(self) -> JsonObject:
        """An entity of a search's answer: with its ``_snippet`` when asked."""
        if not self.searchable:
            return self.entity
        return {"allOf": [self.entity, {"type": "object", "properties": {"_snippet": {
            "type": "string", "description": "With snippet=true and q: the text around the "
                                             "words found, each in <mark>...</mark>"}}}]}

    @property
    def search_body(self) -> JsonObject:
        # Every part but the filter may be null: the same as leaving it out.
        optional = {
            "fetchPlan": self.fetch_plan_body,
            "sort": {"type": "string", "description": "As the sort query parameter"},
            "limit": {"type": "integer", "minimum": 0, "maximum": self.max_limit},
            "offset": {"type": "integer", "minimum": 0},
            "after": {"type": "string", "description": 'The cursor from the Link rel="next" '
                                                       "of the page before"},
            "returnNulls": BOOLEAN, "returnCount": BOOLEAN}
        if not self.searchable:
            return {"type": "object", "required": ["filter"], "properties": {
                "filter": ref("filter"),
                **{name: nullable(schema) for name, schema in optional.items()}}}
        optional["snippet"] = {**BOOLEAN, "description": "With q: each hit's _snippet"}
        return {"type": "object", "anyOf": [{"required": ["filter"]}, {"required": ["q"]}],
                "properties": {"filter": ref("filter"), "q": TEXT_QUERY,
                               **{name: nullable(schema) for name, schema in optional.items()}}}


# The text of a ranked full-text search (data/read/textsearch.py).
TEXT_QUERY: JsonObject = {
    "type": "string", "minLength": 1, "maxLength": MAX_TEXT,
    "description": f"Ranked full-text search: the words (at most {MAX_WORDS}) all found in the "
                   "searchable attributes the caller may read; hits ordered by relevance, "
                   "paged by offset (no cursor)"}

_PLAN_TEXT = ("the name of a plan (_local, _base, _instance_name or a named one), or "
              "an inline plan as JSON")


def _with_id(schema: JsonObject) -> JsonObject:
    return {"allOf": [schema], "required": ["id"]}


def generic_typing(settings: Settings) -> Typing:
    inline = settings.inline_fetch_plans
    plan_body = {"anyOf": [STRING, ref("fetchPlan")]} if inline else STRING
    return Typing(
        "Entities", "entities", "entity", ref("entity"), ref("entityInput"), ref("entityInput"),
        _with_id(ref("entityInput")), dict(STRING), plan_body,
        _PLAN_TEXT if inline else "the name of a plan", settings.default_max_fetch_size, True,
        query_parameters=[{"name": "parameters", "in": "query", "style": "form", "explode": True,
                           "schema": {"type": "object", "additionalProperties": STRING},
                           "description": "The query's parameters by name"}],
        query_body={"type": "object", "description": "The query's parameters by name"},
        max_change_rows=settings.max_change_rows)


def entity_typing(meta: MetaClass, settings: Settings) -> Typing:
    names = list(meta.fetch_plans)
    by_name = named_enum(f"fetchPlanName_{meta.name}", names)
    inline = settings.inline_fetch_plans
    plan = {"anyOf": [by_name, {"type": "string", "contentMediaType": "application/json",
                                "contentSchema": ref("fetchPlan")}]} if inline else by_name
    plan_body = {"anyOf": [by_name, ref("fetchPlan")]} if inline else by_name
    return Typing(
        meta.name, f"{meta.name} entities", meta.name, ref(f"entity_{meta.name}"),
        {"$ref": f"#/components/schemas/entityNew_{meta.name}"},
        ref(f"entityInput_{meta.name}"), _with_id(ref(f"entityInput_{meta.name}")),
        plan, plan_body, _PLAN_TEXT if inline else "the name of a plan",
        settings.max_fetch_size(meta.name), False, max_change_rows=settings.max_change_rows,
        searchable=meta.search is not None,
        entity_ids={**array({"anyOf": [id_schema(meta), ref(reference_schema_name(meta.name))]}),
                    "description": f"{meta.name} ids, or {meta.name} references"})


def query_entity(query: Query) -> MetaClass:
    """The entity a predefined query reads."""
    meta = query.entity
    assert isinstance(meta, MetaClass), f"query {query.name}: {meta!r} is not an entity"
    return meta


def query_typing(query: Query, settings: Settings) -> Typing:
    meta = query_entity(query)
    typing = entity_typing(meta, settings)
    typing.query_tag = f"{meta.name} Queries"
    typing.query_label = f"the query {query.name}"
    names = [name for name in meta.fetch_plans if not name.startswith("_") or name in BUILT_IN]
    # One schema for one set of names: the entity's own when they are all of its plans.
    typing.query_fetch_plan = named_enum(f"fetchPlanName_{meta.name}" if names == list(
        meta.fetch_plans) else f"queryFetchPlanName_{meta.name}", names)
    typing.query_parameters = [
        {"name": p.name, "in": "query", "required": True, "schema": param_schema(p, False),
         **({"style": "form", "explode": True} if p.is_array else {})} for p in query.params]
    typing.query_body = {"type": "object", "required": [p.name for p in query.params],
                         "properties": {p.name: param_schema(p, True)
                                        for p in query.params}}
    typing.query_body_required = bool(query.params)
    typing.unknown_query = False
    return typing


def param_schema(param: QueryParam, in_body: bool) -> JsonObject:
    """The schema of a query parameter's value, from its declared type; an
    entity is its id (in a body also ``{"id": ...}``)."""
    value_type = param.value_type
    item = value_type.item if isinstance(value_type, ArrayType) else value_type
    schema = _schema(item)
    if in_body and isinstance(item, EntityIdType):
        schema = {"anyOf": [schema, {"type": "object", "properties": {"id": schema},
                                     "required": ["id"]}]}
    return {**_schema(value_type), "items": schema} if item is not value_type else schema


@runtime_checkable
class _ValueType(Protocol):
    """A value type of model/valuetypes.py, as far as a document reads it."""

    def json_schema(self) -> JsonObject: ...


def _schema(value_type: object) -> JsonObject:
    """The JSON Schema of a value type (a query parameter's ``value_type`` is one)."""
    assert isinstance(value_type, _ValueType), f"{value_type!r} is not a value type"
    return value_type.json_schema()
