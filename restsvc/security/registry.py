"""The roles an application declares, checked once at startup, and the
effective permissions of each combination of them, worked out once
(security/roles.py says what a combination allows)."""
from collections.abc import Collection, Iterable, Sequence
from typing import TypeVar

from ..model.metadata import Metadata, MetadataError
from .roles import (API, ATTRIBUTE_LEVELS, OPERATIONS, PREDEFINED, Permissions, ResourceRole,
                    RowLevelRole, entity_operations)

_PermissionsKey = tuple[tuple[str, ...], tuple[str, ...], str | None]
_Role = TypeVar("_Role", ResourceRole, RowLevelRole)


class RoleRegistry:
    """All declared roles; permissions per role combination are computed once."""

    def __init__(self, metadata: Metadata, resource_roles: Iterable[ResourceRole],
                 row_level_roles: Iterable[RowLevelRole]) -> None:
        self.metadata = metadata
        self.resource: dict[str, ResourceRole] = {}
        self.row_level: dict[str, RowLevelRole] = {}
        for role in tuple(PREDEFINED) + tuple(resource_roles):
            self._add(self.resource, role)
        for row_role in row_level_roles:
            self._add(self.row_level, row_role)
        self._cache: dict[_PermissionsKey, Permissions] = {}
        # Validate every declaration now rather than at a client's first request.
        for role in self.resource.values():
            Permissions(metadata, [role], [])
            for action in (a for p in role.attributes.values() for a in p.values()):
                if action not in ATTRIBUTE_LEVELS:
                    raise MetadataError(f"role {role.code}: attribute action must be view or modify")
            for ops in role.entities.values():
                if not entity_operations(ops) <= set(OPERATIONS):
                    raise MetadataError(f"role {role.code}: unknown entity operation in {ops!r}")
        for row_role in self.row_level.values():
            for entity_name in row_role.filters:
                if entity_name not in metadata.entities:
                    raise MetadataError(f"row-level role {row_role.code}: unknown entity "
                                        f"{entity_name}")

    def _add(self, registry: dict[str, _Role], role: _Role) -> None:
        if role.code in self.resource or role.code in self.row_level:
            raise MetadataError(f"role code {role.code} is declared twice")
        registry[role.code] = role

    def __contains__(self, code: object) -> bool:
        return code in self.resource or code in self.row_level

    def split(self, codes: Collection[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Role codes of either kind -> (resource codes, row-level codes); unknown ones drop."""
        return (tuple(c for c in codes if c in self.resource),
                tuple(c for c in codes if c in self.row_level))

    def permissions(self, resource_codes: Sequence[str], row_level_codes: Sequence[str] = (),
                    scope: str | None = None) -> Permissions:
        """Effective permissions for REST (API-scope) requests; unknown codes grant
        nothing; ``scope`` (a token's granted scopes) narrows them."""
        key: _PermissionsKey = (tuple(resource_codes), tuple(row_level_codes), scope)
        permissions = self._cache.get(key)
        if permissions is None:
            resource = [self.resource[c] for c in resource_codes
                        if c in self.resource and API in self.resource[c].scope]
            row_level = [self.row_level[c] for c in row_level_codes if c in self.row_level]
            permissions = self._cache[key] = Permissions(self.metadata, resource, row_level,
                                                         granted=key[0] + key[1], scope=scope)
        return permissions
