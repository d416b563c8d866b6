"""Resource roles, row-level roles and the effective permissions of a caller.

This is the one place that decides "may this caller do X": the data layer,
the file endpoints, services and reports all ask a ``Permissions`` object.

An application declares roles in code:

    ResourceRole("sales-reader", "Sales: read only",
                 entities={"Customer": "read", "Order": "read"},
                 attributes={"Customer": {"*": "view"}, "Order": {"amount": "modify"}},
                 specifics=("rest.enabled", "rest.fileDownload.enabled"))

    RowLevelRole("own-orders", "Own orders",
                 filters={"Order": {"conditions": [
                     {"property": "customer.userId", "operator": "=",
                      "value": ":session$userId"}]}})

Services are granted by ``services=("orderService.calculateTotal",
"orderService.*", "*")``; ``system-full-access`` grants all, ``rest-minimal`` none.
Entity operations are ``create``, ``read``, ``update``, ``delete`` or ``*``;
attribute actions ``view`` or ``modify`` (modify implies view); entity and
attribute names may be ``*``. Row-level filters use the entities' search
filter format; ``:session$username`` and ``:session$userId`` stand for the
caller. Effective permissions are the union of the caller's resource roles;
row-level filters of several roles all apply.

Row-level roles also guard writes (``writes``): per entity and action
(``create``, ``update``, ``delete``) a condition in the same filter format, a
Python predicate ``predicate(row, session) -> bool`` (``row`` the stored model
instance) for what conditions cannot say, or a tuple of them (all must hold).
data/write/rowrules.py checks them on every write; rules of several roles all apply.

    RowLevelRole("own-orders-writer", "Own orders: write",
                 writes={"Order": {"create": OWN, "update": (OWN, NOT_SHIPPED),
                                   "delete": (OWN, NOT_SHIPPED)}})

Row-level rules reach compositions: a composition child (an order's lines)
is visible only when its owner is, transitively (the lines of a hidden order
are hidden, and so are their own compositions), besides any filter declared
on the child itself. ``row_owners`` names the owners whose visibility a
child's rows depend on; the data layer builds the condition from it once.

A token's scopes (clients registered with ``scopes``) narrow what its roles
give, never widen it, by the one table of security/scopes.py: ``read`` keeps
what only reads, ``write`` what only changes, what does both needs both.
"""
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..jsonio import JsonObject, JsonValue
from ..model.metadata import MetaClass, MetaEnum, MetadataError, MetaProperty, Metadata
from .modelmaps import (HIDDEN, Owner, attribute_names, embedded_levels, keyed_attributes,
                        restricted_owners)
from .scopes import ACTIONS, ALL_SCOPES, granted_scopes, keeps

OPERATIONS = ("create", "read", "update", "delete")
SPECIFICS = ("rest.enabled", "rest.fileUpload.enabled", "rest.fileDownload.enabled",
             "rest.deleted.read", "rest.deleted.restore", "rest.deleted.purge",
             "reports.rest.enabled", "tenants.actFor")
VIEW, MODIFY = 1, 2
ATTRIBUTE_LEVELS = {"view": VIEW, "modify": MODIFY}
API = "API"


# The stored model instance a write rule's predicate is given: each predicate
# declares its own entity's class, which a narrower type here would refuse.
StoredRow = Any
# A row-level write rule: a condition in the search filter format, or a
# predicate(row, session) -> bool.
WriteRule = Mapping[str, JsonValue] | Callable[[StoredRow, Mapping[str, str]], bool]

# What readers and writers work out once for these permissions, each under a
# key of its own (serializers, readers, ETags): a dict of values of as many
# types, until the one typed memo of issue 38 replaces it. Any for now, not
# dict[Hashable, Any]: data/bound.py keeps an _Everything there and passes it
# where a Permissions is declared.
PermissionsMemo = Any


@dataclass(frozen=True)
class ResourceRole:
    code: str
    name: str = ""
    # entity or * -> op, "op,op" or tuple
    entities: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    # entity or * -> {attr or *: view|modify}
    attributes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    specifics: Sequence[str] = ()
    scope: Sequence[str] = ("API", "UI")
    services: Sequence[str] = ()  # service methods: "orderService.calculateTotal", "orderService.*", "*"
    reports: Sequence[str] = ()   # report codes or ids this role may run, or "*"


@dataclass(frozen=True)
class RowLevelRole:
    code: str
    name: str = ""
    filters: Mapping[str, Mapping[str, JsonValue]] = field(default_factory=dict)  # entity -> filter
    # entity -> {action: rule or (rules)}; a rule is a search filter or a
    # predicate(row, session) -> bool
    writes: Mapping[str, Mapping[str, "WriteRule | Sequence[WriteRule]"]] = field(default_factory=dict)


REST_MINIMAL = ResourceRole("rest-minimal", "REST: minimal access", specifics=("rest.enabled",),
                            scope=("API",))
# Full operations on the built-in User entity. Password and role codes are
# secret attributes (never shown or written through REST; roles are assigned
# with `restsvc user`), so this role cannot grant itself more: see security/users.py.
USER_MANAGEMENT = ResourceRole("user-management", "User management", entities={"User": "*"},
                               attributes={"User": {"*": "modify"}})
SYSTEM_FULL_ACCESS = ResourceRole("system-full-access", "Full access", entities={"*": "*"},
                                  attributes={"*": {"*": "modify"}}, specifics=("*",),
                                  services=("*",), reports=("*",))
# The metrics endpoint's grant (api/metrics.py): held by name, never implied
# by another role's wildcards.
METRICS_READER = ResourceRole("metrics-reader", "Operations: read the metrics", scope=("API",))
# A tenant's administrator (restsvc/docs/tenants.md): held by a user of a
# tenant, it manages that tenant's users and their API keys only (the data
# layer and keygrants.py limit both to the holder's tenant).
TENANT_ADMINISTRATION = ResourceRole(
    "tenant-administration", "Tenant administration: users and API keys of one's tenant",
    entities={"User": "*"}, attributes={"User": {"*": "modify"}},
    specifics=("rest.enabled", "rest.apiKeys.manage"))
PREDEFINED = (REST_MINIMAL, USER_MANAGEMENT, SYSTEM_FULL_ACCESS, METRICS_READER,
              TENANT_ADMINISTRATION)


def entity_operations(value: str | Sequence[str]) -> set[str]:
    items = value.split(",") if isinstance(value, str) else list(value)
    ops = {item.strip() for item in items}
    return set(OPERATIONS) if "*" in ops else ops


class Permissions:
    """What one combination of roles allows, resolved against the metadata."""

    def __init__(self, metadata: Metadata, resource_roles: Sequence[ResourceRole],
                 row_level_roles: Sequence[RowLevelRole], granted: Iterable[str] = (),
                 scope: str | None = None) -> None:
        # Every role code the caller holds, also those that grant nothing to REST
        # requests: what user management compares (security/users.py).
        self.granted = frozenset(granted)
        self.resource_roles = tuple(role.code for role in resource_roles)
        self.row_level_roles = tuple(role.code for role in row_level_roles)
        self._entities: dict[str, set[str]] = {name: set() for name in metadata.entities}
        self._attributes: dict[str, dict[str, int]] = {
            name: dict.fromkeys(attribute_names(meta), HIDDEN)
            for name, meta in metadata.entities.items()}
        self._specifics: set[str] = set()
        self._services: set[str] = set()
        self._reports: set[str] = set()
        for role in resource_roles:
            for target, ops in role.entities.items():
                for name in _names(self._entities, target):
                    self._entities[name] |= entity_operations(ops)
            for target, policies in role.attributes.items():
                for name in _names(self._attributes, target):
                    levels = self._attributes[name]
                    for attr, action in policies.items():
                        for attr_name in _names(levels, attr):
                            levels[attr_name] = max(levels[attr_name], ATTRIBUTE_LEVELS[action])
            self._specifics |= set(role.specifics)
            self._services |= set(role.services)
            self._reports |= set(role.reports)
        embedded_levels(metadata, self._attributes)
        for name, meta in metadata.entities.items():
            if getattr(meta.model, "is_read_only_entity", False):    # e.g. HistoryItem
                self._entities[name] &= {"read"}
        self.scope = scope
        self._scopes = granted_scopes(scope)
        if scope is not None:
            self._narrow(self._scopes)
        # The actions of specific policies (security/scopes.py) these roles and scopes allow.
        self._allowed = frozenset(name for name, action in ACTIONS.items()
                                  if self._holds(action.grant) and action.needs <= self._scopes)
        # id and version identify a row: visible whenever the row is.
        for name, levels in self._attributes.items():
            if "read" in self._entities[name]:
                for system in ("id", "version"):
                    levels[system] = max(levels[system], VIEW)
        self._row_filters: dict[str, list[Mapping[str, JsonValue]]] = {}
        for row_role in row_level_roles:
            for entity_name, condition in row_role.filters.items():
                self._row_filters.setdefault(entity_name, []).append(condition)
        self._row_owners = restricted_owners(metadata, set(self._row_filters))
        self._write_rules: dict[tuple[str, str], list[WriteRule]] = {}
        for row_role in row_level_roles:
            for entity_name, actions in row_role.writes.items():
                for action, rules in actions.items():
                    # a tuple or list of rules, or one rule (a Mapping or a predicate)
                    self._write_rules.setdefault((entity_name, action), []).extend(
                        rules if isinstance(rules, (tuple, list)) else [cast(WriteRule, rules)])
        self._write_owners = restricted_owners(
            metadata, {name for name, action in self._write_rules if action == "update"})
        self._write_checked = {name for name, _ in self._write_rules} | set(self._write_owners)
        # A rule protects the rows it filters, not the rows its condition reads
        # through a reference: with own-orders, whoever could write another
        # customer's userId would make that customer's orders its own (to read,
        # or to write under own-orders-writer). Those attributes are view-only
        # to the rule's holders, whatever their resource roles grant.
        conditions: dict[str, list[JsonValue]] = {}
        for (entity_name, _), rules in self._write_rules.items():
            conditions.setdefault(entity_name, []).extend(r for r in rules if not callable(r))
        for entity_name, specs in self._row_filters.items():
            conditions.setdefault(entity_name, []).extend(specs)
        for entity_name, attribute in keyed_attributes(metadata, conditions):
            levels = self._attributes[entity_name]
            levels[attribute] = min(levels[attribute], VIEW)
        # A value type's attributes as the caller sees them anywhere: the
        # highest level of each over the readable attributes that embed it
        # (its metadata and OpenAPI schemas; an answer or a write follows the
        # owner's own ``address.city``).
        for name, meta in metadata.entities.items():
            if "read" not in self._entities[name]:
                continue
            levels = self._attributes[name]
            for prop in meta.properties.values():
                if prop.is_embedded and levels[prop.name]:
                    parts = self._attributes.setdefault(prop.related.name, {})
                    for part in prop.related.properties:
                        parts[part] = max(parts.get(part, HIDDEN), levels[f"{prop.name}.{part}"])
        # What serializers work out once for these permissions (serialize.py).
        self.memo: PermissionsMemo = {}

    def _narrow(self, scopes: frozenset[str]) -> None:
        """Take away what the token's scopes do not keep (security/scopes.py)."""
        kept = {op for op in OPERATIONS if keeps(scopes, f"entity.{op}")}
        for ops in self._entities.values():
            ops &= kept
        top = MODIFY if keeps(scopes, "attribute.modify") else HIDDEN
        view = VIEW if keeps(scopes, "attribute.view") else HIDDEN
        for levels in self._attributes.values():
            for attr, level in levels.items():
                levels[attr] = top if level >= MODIFY and top else min(level, view)
        if not keeps(scopes, "service.call"):
            self._services = set()
        if not keeps(scopes, "report.run"):
            self._reports = set()

    def _holds(self, grant: str | None) -> bool:
        """Whether the roles give ``grant``: a specific policy, ``role:<code>``
        (a role held by name, never implied by wildcards) or None (always)."""
        if grant is None:
            return True
        if grant.startswith("role:"):
            return grant[5:] in self.resource_roles
        return "*" in self._specifics or grant in self._specifics

    def scope_keeps(self, action: str) -> bool:
        """Whether the token's scopes keep ``action`` (ACTIONS), whatever its
        roles give: what the documents filtered per caller leave out."""
        return ACTIONS[action].needs <= self._scopes

    def can(self, entity_name: str, operation: str) -> bool:
        return operation in self._entities.get(entity_name, ())

    def attribute(self, entity_name: str, attribute: str) -> int:
        """0 hidden, 1 view, 2 modify."""
        return self._attributes.get(entity_name, {}).get(attribute, HIDDEN)

    def attribute_levels(self, entity_name: str) -> dict[str, int]:
        return self._attributes.get(entity_name, {})

    def specific(self, name: str) -> bool:
        """Whether the caller may do the action ``name`` (security/scopes.py
        ACTIONS). A specific policy the table does not know (an application's
        own) may read or write, so a token keeps it only with every scope."""
        if name in ACTIONS:
            return name in self._allowed
        return self._holds(name) and self._scopes == ALL_SCOPES

    def can_call(self, service: str, method: str) -> bool:
        """Whether a service method is granted (patterns ``*``, ``svc.*``, ``svc.method``)."""
        grants = self._services
        return bool(grants) and ("*" in grants or f"{service}.*" in grants
                                 or f"{service}.{method}" in grants)

    def may_run_report(self, report_id: str, code: str | None = None) -> bool:
        return "*" in self._reports or report_id in self._reports or (
            code is not None and code in self._reports)

    def readable_properties(self, meta: MetaClass) -> tuple[MetaProperty, ...]:
        """The properties of ``meta`` the caller may read (none unless it may read
        the entity; a reference only while it may read the target too): what
        the caller-facing metadata and OpenAPI document show. Worked out once."""
        key = ("readable", meta.name)
        found: tuple[MetaProperty, ...] | None = self.memo.get(key)
        if found is None:
            if meta.is_embedded:      # a value type: its parts, as its readers see them
                found = tuple(prop for prop in meta.properties.values()
                              if self.attribute(meta.name, prop.name)
                              and (prop.target is None or self.can(prop.target.name, "read")))
            elif not self.can(meta.name, "read"):
                found = ()
            else:
                found = tuple(prop for prop in meta.properties.values()
                              if self.attribute(meta.name, prop.name)
                              and (prop.target is None or prop.is_embedded
                                   or self.can(prop.target.name, "read")))
            self.memo[key] = found
        return found

    def reads_value_type(self, metadata: Metadata, name: str) -> bool:
        """Whether an attribute the caller may read embeds the value type ``name``."""
        return any(prop.is_embedded and prop.target is not None and prop.target.name == name
                   for meta in metadata.entities.values()
                   for prop in self.readable_properties(meta))

    def visible_enums(self, metadata: Metadata) -> tuple[MetaEnum, ...]:
        """The enums the caller gets to see: those no entity attribute uses (a
        service may), and those a readable attribute uses."""
        key = ("enums",)
        found: tuple[MetaEnum, ...] | None = self.memo.get(key)
        if found is None:
            used: set[str] = set()
            shown: set[str] = set()
            for meta in metadata.entities.values():
                readable = self.readable_properties(meta)
                for prop in meta.properties.values():
                    if prop.meta_enum is not None:
                        used.add(prop.meta_enum.name)
                        if prop in readable:
                            shown.add(prop.meta_enum.name)
            found = self.memo[key] = tuple(meta_enum for name, meta_enum in metadata.enums.items()
                                           if name not in used or name in shown)
        return found

    def row_filters(self, entity_name: str) -> Sequence[Mapping[str, JsonValue]]:
        """The row-level filters declared on the entity itself."""
        return self._row_filters.get(entity_name, ())

    def row_owners(self, entity_name: str) -> tuple[Owner, ...]:
        """(owner entity, child's foreign key) of the compositions that own
        this entity and whose owner rows are restricted themselves."""
        return self._row_owners.get(entity_name, ())

    def write_rules(self, entity_name: str, action: str) -> Sequence[WriteRule]:
        """The row rules on ``action`` (create, update, delete) of the entity itself."""
        return self._write_rules.get((entity_name, action), ())

    def write_owners(self, entity_name: str) -> tuple[Owner, ...]:
        """(owner entity, child's foreign key) of the compositions that own this
        entity and whose owner rows have update rules (directly or through theirs)."""
        return self._write_owners.get(entity_name, ())

    def write_checked(self, entity_name: str) -> bool:
        """Whether row rules apply to writes of the entity (its own or an owner's)."""
        return entity_name in self._write_checked

    def row_restricted(self, entity_name: str) -> bool:
        """Whether row-level rules hide any rows of the entity (its own or an owner's)."""
        return entity_name in self._row_filters or entity_name in self._row_owners

    def to_json(self) -> JsonObject:
        """``GET /permissions``: every entity operation and attribute, 0/1(/2)."""
        return {
            "entities": [{"target": f"{name}:{op}", "value": int(op in ops)}
                         for name, ops in self._entities.items() for op in OPERATIONS],
            "entityAttributes": [{"target": f"{name}:{attr}", "value": level}
                                 for name, levels in self._attributes.items()
                                 for attr, level in levels.items()],
            "specifics": [{"target": name, "value": int(self.specific(name))}
                          for name in SPECIFICS],
            "authorities": [f"ROLE_{code}" for code in self.resource_roles]
                           + [f"ROW_LEVEL_ROLE_{code}" for code in self.row_level_roles],
        }


def _names(known: Mapping[str, object], target: str) -> list[str]:
    if target == "*":
        return list(known)
    if target not in known:
        raise MetadataError(f"role policy names unknown entity or attribute {target!r}")
    return [target]
