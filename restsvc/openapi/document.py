"""The generic and the detailed OpenAPI 3.1 documents.

Both are written from the route table the router uses (as plain ``Route``
values: this package does not know Werkzeug), the operation tables
(operations.py, endpoints.py) and, for the detailed one, the metadata and
the predefined queries. Which operations need a token, and which need the
``rest.enabled`` policy, comes from the gate's own patterns.

The detailed document is written for one caller's permissions (``Documents``
keeps one per combination of roles and scopes): entities it may not read, attributes it
may not read, entity operations it may not do, queries of entities it may not
read, service methods it may not call and routes whose checks (files,
webhooks, feed, reports) its token's scopes do not keep are left out, as the
metadata API and ``/rest/services`` leave them out. Without permissions it shows everything.
"""
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..data.read.queries import Query
from ..jsonio import JsonObject
from ..model.metadata import MetaClass, Metadata, MetaEnum, MetaProperty
from ..security.gate import Gate
from ..security.roles import MODIFY, Permissions
from ..services.registry import ServiceMethod, Services
from ..settings import Settings
from .endpoints import ENDPOINTS, HANDLERS, NO_DATABASE, Build
from .entities import entity_schemas, stub_schemas
from ..data.write.history import HISTORY_ITEM
from .operations import E, ENTITY_OPERATIONS, QUERY_OPERATIONS, OperationOf
from .parts import failures, response_components, with_tenant_header
from .reports import report_operation, report_schemas
from .enums import name_enums
from .requestline import bound_requests
from .schemas import STRING, common_schemas, enum_schema, id_schema, named_enum
from .services import (SERVICE_ENDPOINTS, SERVICE_OPERATIONS, method_operation,
                       service_descriptor)
from .shapes import entity_typing, generic_typing, query_entity, query_typing

ARGUMENT = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
SCHEMA_REF = re.compile(r'"#/components/schemas/((?:entity(?:Input|New|Ref)?|enum)_[^"]+)"')
HISTORY = ("GET", f"{E}/<entity_id>/history")
DEFAULT_VERSION = "1.0"     # of an application that declares none
SOFT_DELETE = {("POST", f"{E}/<entity_id>/restore"), ("POST", f"{E}/<entity_id>/purge")}
# The entity operation each write route needs; every other route reads.
WRITES = {("POST", E): "create", ("PUT", E): "update", ("DELETE", E): "delete",
          ("PUT", f"{E}/<entity_id>"): "update", ("DELETE", f"{E}/<entity_id>"): "delete",
          ("POST", f"{E}/<entity_id>/restore"): "update",
          ("POST", f"{E}/<entity_id>/purge"): "delete", ("POST", f"{E}/import"): "create",
          ("PUT", f"{E}/search"): "update", ("DELETE", f"{E}/search"): "delete"}
TAGS = [
    ("Authentication", "OAuth 2 tokens: get, revoke, introspect; API keys"),
    ("Entities", "Generic access to every entity, under the caller's policies"),
    ("Queries", "Predefined queries"),
    ("Services", "Business services of the application"),
    ("Reports", "Reports available through REST"), ("Files", "Upload and download"),
    ("Events", "Committed changes: the change feed and webhooks"),
    ("Metadata", "Entities, fetch plans, enums, datatypes"),
    ("Messages", "Localized captions"), ("User session", "The caller and its permissions"),
    ("Documentation", "These documents"), ("Health", "Liveness and readiness of this instance"),
    ("Metrics", "Prometheus figures of this instance, for the metrics-reader role"),
]
# The paths of a document: path -> method -> its operation.
Paths = dict[str, dict[str, JsonObject]]


@dataclass(frozen=True)
class Route:
    rule: str         # the router's rule text: /rest/entities/<entity_name>
    methods: tuple[str, ...]  # the methods it answers (HEAD and OPTIONS left out)
    summary: str      # the handler's first docstring line, for routes nobody described
    handler: str = "" # module.function of the handler (routes at configurable paths)
    canonical: str = ""  # the rule at its default path (svc.rest.*-path), which the tables know
    action: str = ""  # the action its handler checks (security/scopes.py checks), if any
    needs_token: bool = False  # its handler asks for a bearer token itself (security/gate.py)

    @property
    def key(self) -> str:
        return self.canonical or self.rule


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def openapi_path(rule: str) -> tuple[str, list[str]]:
    """``/rest/entities/<entity_name>/<entity_id>`` -> the OpenAPI path and its parameters."""
    names = [camel(name) for name in ARGUMENT.findall(rule)]
    return ARGUMENT.sub(lambda m: "{" + camel(m.group(1)) + "}", rule), names


def described(method: str, rule: str, handler: str = "") -> bool:
    """Whether an operation table or the reports document describes a route."""
    return _typed(method, rule) is not None or _fixed_build(method, rule, handler) is not None \
        or report_operation(method, rule) is not None


def _typed(method: str, rule: str) -> OperationOf | None:
    """The operation of a route written with the shapes of an entity or a query."""
    key = (method, rule)
    return ENTITY_OPERATIONS.get(key) or QUERY_OPERATIONS.get(key)


def _fixed_build(method: str, rule: str, handler: str = "") -> Build | None:
    """The operation of a route written as it is (by rule, or by handler at configurable paths)."""
    key = (method, rule)
    return ENDPOINTS.get(key) or SERVICE_ENDPOINTS.get(key) or SERVICE_OPERATIONS.get(key) \
        or HANDLERS.get((method, handler))


class DocumentBuilder:
    def __init__(self, routes: Sequence[Route], gate: Gate, settings: Settings,
                 metadata: Metadata | None = None, queries: Sequence[Query] = (),
                 services: Services | None = None, version: str | None = None,
                 application_entities: Iterable[str] = ()):
        self.routes, self.version = routes, version    # version: Application.version
        # The application's own entities (their names, in declaration order): listed first.
        self.application_entities = tuple(application_entities)
        # The OAuth flows the registered clients can use: the only ones offered.
        self.grants = frozenset(grant for client in settings.clients
                                for grant in client.grant_types)
        self.bearer: list[dict[str, list[str]]] = [
            {name: []} for name in security_schemes("", "", self.grants) if name != "clientBasic"]
        self.gate, self.settings, self.metadata = gate, settings, metadata
        # Requests may name a tenant: the application has tenant-scoped entities.
        self.tenants = metadata is not None and any(
            meta.tenant for meta in metadata.entities.values()
            if meta.name in self.application_entities)
        self.queries, self.services = queries, services

    # -- the two documents ---------------------------------------------------
    def generic(self) -> JsonObject:
        typing = generic_typing(self.settings)
        paths: Paths = {}
        for route in self.routes:
            for method in _methods(route):
                typed = _typed(method, route.key)
                if typed is not None:
                    self._add(paths, method, route.rule, typed(typing), {})
                else:
                    self._fixed(paths, method, route, {})
        named = self.settings.api_info.title
        return self._document(f"{named}: the generic API" if named else "restsvc generic REST API",
                              paths, common_schemas(),
                              "The generic REST API: every application has these endpoints.",
                              generic=True)

    def detailed(self, permissions: Permissions | None = None) -> JsonObject:
        metadata = self.metadata
        if metadata is None:
            raise ValueError("the detailed document is written from the metadata")
        shown = _Shown(metadata, permissions)
        path_schemas = {
            "entityName": named_enum("entityName", [meta.name for meta in shown.entities]),
            "enumName": named_enum("enumName", [e.name for e in shown.enums]),
        }
        paths: Paths = {}
        for route in self.routes:
            for method in _methods(route):
                key = (method, route.key)
                if key in ENTITY_OPERATIONS:
                    operation = WRITES.get(key, "read")
                    for meta in shown.entities:
                        if not shown.can(meta, operation) or (
                                key == HISTORY and not shown.keeps_history(meta)) or (
                                key in SOFT_DELETE and not meta.soft_delete):
                            continue
                        concrete = route.rule.replace("<entity_name>", meta.name)
                        schemas = {"entityId": id_schema(meta)}
                        self._add(paths, method, concrete,
                                  ENTITY_OPERATIONS[key](entity_typing(meta, self.settings)), schemas)
                elif key in SERVICE_OPERATIONS:
                    for method_ in self._service_methods(method, permissions):
                        concrete = route.rule.replace("<service_name>", method_.service) \
                            .replace("<method_name>", method_.name)
                        self._add(paths, method, concrete,
                                  method_operation(metadata, method_, method), {})
                elif key in QUERY_OPERATIONS:
                    for query in (q for q in self.queries if shown.can(query_entity(q), "read")):
                        concrete = route.rule.replace("<entity_name>", query_entity(query).name) \
                            .replace("<query_name>", query.name)
                        self._add(paths, method, concrete, QUERY_OPERATIONS[key](
                            query_typing(query, self.settings)), {})
                elif shown.keeps(route):
                    self._fixed(paths, method, route, path_schemas)
        schemas = common_schemas()
        schemas.update(entity_schemas(shown.entities, shown.properties, shown.modifiable))
        _add_referenced_stubs(paths, schemas, metadata)
        return self._document("restsvc project REST API", paths, schemas,
                              "This application's REST API: its entities, predefined queries "
                              "and the generic endpoints, with their exact shapes.")

    def _fixed(self, paths: Paths, method: str, route: Route,
               path_schemas: Mapping[str, JsonObject]) -> None:
        """A route written as it is (no expansion per entity, query or method)."""
        reports = report_operation(method, route.key)
        if reports is not None:
            op, schemas = reports
            names = openapi_path(route.rule)[1]
            self._add(paths, method, route.rule, op, {**path_schemas, **dict(zip(names, schemas))})
            return
        build = _fixed_build(method, route.key, route.handler)
        self._add(paths, method, route.rule, build() if build else _undescribed(route),
                  path_schemas, no_database=(method, route.key) in NO_DATABASE
                  or (method, route.handler) in NO_DATABASE, needs_token=route.needs_token)

    def _service_methods(self, http_method: str,
                         permissions: Permissions | None = None) -> list[ServiceMethod]:
        if self.services is None:
            return []
        return [method for service in self.services.services.values()
                for method in service.methods.values() if http_method in method.http_methods
                and (permissions is None or permissions.can_call(method.service, method.name))]

    # -- assembly --------------------------------------------------------------
    def _add(self, paths: Paths, method: str, rule: str, op: JsonObject,
             path_schemas: Mapping[str, JsonObject], no_database: bool = False,
             needs_token: bool = False) -> None:
        path, names = openapi_path(rule)
        sample = ARGUMENT.sub("x", rule)
        op = dict(op)
        op["operationId"] = re.sub(r"[^A-Za-z0-9]+", "_", f"{method.lower()}{path}").strip("_")
        if names:
            op["parameters"] = [{"name": name, "in": "path", "required": True,
                                 "schema": path_schemas.get(name, STRING)} for name in names] \
                + op.get("parameters", [])
        responses = dict(op["responses"])
        # A route the gate protects, or one whose handler asks for the token itself.
        protected = self.gate.is_protected(sample) or needs_token
        if protected or not no_database:
            responses.setdefault("503", failures("ServiceUnavailable")["503"])
        if "security" not in op:
            if protected:
                op["security"] = self.bearer
                responses.update(failures("Unauthorized"))
                if self.gate.rest_enabled.match(sample):
                    responses.setdefault("403", failures("Forbidden")["403"])
                    if self.tenants:
                        with_tenant_header(op, responses)
            else:
                op["security"] = []
        op["responses"] = dict(sorted(responses.items()))
        paths.setdefault(path, {})[method.lower()] = op

    def _document(self, title: str, paths: Paths, schemas: dict[str, JsonObject],
                  description: str, generic: bool = False) -> JsonObject:
        schemas["serviceDescriptor"] = service_descriptor()
        for name, schema in report_schemas().items():
            schemas.setdefault(name, schema)
        # svc.rest.docs.*; the version defaults to the application's.
        info = self.settings.api_info.info(self.settings.api_info.title or title, description,
                                           self.version or DEFAULT_VERSION)
        if generic:
            info.update(title=title, description=description)
        document: JsonObject = {
            "openapi": "3.1.0",
            "info": info,
            "servers": [{"url": "/"}],
            "tags": _tags(paths, self.metadata, self.application_entities),
            "paths": dict(sorted(paths.items())),
            "components": {
                "schemas": dict(sorted(schemas.items())),
                "responses": response_components(),
                "securitySchemes": security_schemes("", self.settings.paths.token, self.grants),
            },
        }
        # One plain tree: no shared objects (YAML would write them as anchors).
        document = json.loads(json.dumps(document))
        name_enums(document, self.metadata.enums if self.metadata is not None else {})
        bound_requests(document["paths"], document["components"]["schemas"])
        return document


class _Shown:
    """What of the metadata one caller's document shows (everything without permissions)."""

    def __init__(self, metadata: Metadata, permissions: Permissions | None):
        self.permissions = permissions
        self.log = metadata.entity(HISTORY_ITEM)
        if permissions is None:
            self.entities: list[MetaClass] = list(metadata.entities.values())
            self.enums: list[MetaEnum] = list(metadata.enums.values())
        else:
            self.entities = [m for m in metadata.entities.values() if permissions.can(m.name, "read")]
            self.enums = list(permissions.visible_enums(metadata))

    def can(self, meta: MetaClass, operation: str) -> bool:
        return self.permissions is None or self.permissions.can(meta.name, operation)

    def keeps(self, route: Route) -> bool:
        """Whether a route of its own is shown: a token's scopes keep what its
        handler checks (security/scopes.py)."""
        return self.permissions is None or not route.action \
            or self.permissions.scope_keeps(route.action)

    def keeps_history(self, meta: MetaClass) -> bool:
        """Whether the entity's history route is shown: it keeps one, and the
        caller may read the entity log."""
        return meta.history is not None and self.log is not None and self.can(self.log, "read")

    def properties(self, meta: MetaClass) -> tuple[MetaProperty, ...]:
        if self.permissions is None:
            return tuple(meta.properties.values())
        return self.permissions.readable_properties(meta)

    def modifiable(self, prop: MetaProperty) -> bool:
        return self.permissions is None or self.permissions.attribute(
            prop.owner.name, prop.name) >= MODIFY


def _add_referenced_stubs(paths: Paths, schemas: dict[str, JsonObject],
                          metadata: Metadata) -> None:
    """An entity the caller may not read can still be named by what it may use
    (a service method's parameter or result): its schemas then say only that
    it is an entity with an id, so every reference in the document resolves.
    An enum named by a parameter gets its schema the same way."""
    text = json.dumps([paths, schemas])
    for name in sorted(set(SCHEMA_REF.findall(text)) - set(schemas)):
        kind, _, target = name.partition("_")
        if kind == "enum" and target in metadata.enums:
            schemas[name] = enum_schema(metadata.enums[target])
        elif kind != "enum" and target in metadata.entities:
            schemas.update(stub_schemas(metadata.entities[target]))


def security_schemes(root_path: str, token_path: str,
                     grants: Collection[str]) -> dict[str, JsonObject]:
    """Any of the first ones gives the bearer token an operation needs: one
    scheme per OAuth flow a registered client can use (``grants``), so the
    docs page's Authorize dialog offers each with its own fields, the one most
    callers use first; then a token pasted as it is; then HTTP Basic for the
    token endpoints."""
    token_url = f"{root_path}{token_path}"
    schemes: dict[str, JsonObject] = {}
    if "client_credentials" in grants:
        schemes["clientCredentials"] = {
            "type": "oauth2", "description": "A token for a registered client: its id and secret",
            "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}}}
    if "password" in grants:
        schemes["password"] = {
            "type": "oauth2", "description": "A token for a user: a client's id and secret, "
                                             "and the user's name and password",
            "flows": {"password": {"tokenUrl": token_url, "scopes": {}}}}
    schemes["bearerAuth"] = {"type": "http", "scheme": "bearer",
                             "description": f"An access token from POST {token_path}, in the "
                                            "Authorization header (never in the URL)"}
    schemes["clientBasic"] = {"type": "http", "scheme": "basic",
                              "description": "A registered client: its id and secret"}
    return schemes


def _tags(paths: Paths, metadata: Metadata | None,
          application_entities: Sequence[str] = ()) -> list[JsonObject]:
    """The tags the operations use, the known ones first in their order; an
    entity's tag ("Order") follows Entities (the application's entities in
    their order, then the built-in ones), its queries ("Order Queries")
    Queries, a service's ("orderService") Services, the application's own last."""
    known = dict(TAGS)
    order = list(known)
    used: list[str] = []
    for methods in paths.values():
        for op in methods.values():
            for tag in op["tags"]:
                if tag not in used:
                    used.append(tag)

    def position(tag: str) -> tuple[int, int]:
        if tag in known:
            return order.index(tag), 0
        if tag == "Application":
            return len(order), 0
        if metadata is not None and tag in metadata.entities:
            return order.index("Entities"), 1 + _entity_rank(tag, application_entities)
        if tag.endswith(" Queries"):
            return order.index("Queries"), 1 + _entity_rank(tag[:-len(" Queries")],
                                                            application_entities)
        return order.index("Services"), 1
    return [{"name": tag, **({"description": known[tag]} if tag in known else {})}
            for tag in sorted(used, key=position)]


def _entity_rank(name: str, application_entities: Sequence[str]) -> int:
    """The application's entities first, in their order; the built-in ones after."""
    if name in application_entities:
        return application_entities.index(name)
    return len(application_entities)


def _methods(route: Route) -> list[str]:
    """The route's methods; HEAD (answered for every GET) only where it is described."""
    return [m for m in route.methods if m != "HEAD" or described(m, route.key)]


def _undescribed(route: Route) -> JsonObject:
    """An application's own route: the table does not know what it answers."""
    return {"tags": ["Application"], "summary": route.summary or route.rule,
            "responses": {"default": {"description": "Described by the application"}}}
