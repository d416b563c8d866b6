"""Entity tags of single-entity answers (conditional requests).

A tag is ``"<version>-<digest>"``: the version the body was read at, in the
clear so ``If-Match`` can compare versions whatever plan the caller read with,
and a short digest of what else shaped the body -- the id, the fetch plan, the
caller's permissions (attribute levels, row-level roles and, with row-level
roles, the session values they may use) and ``returnNulls``. Two callers who
see different bodies so never share a tag; the body itself is never hashed.
Changes of referenced rows do not change the tag (their versions are not
part of it).
"""
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import peewee

from ...jsonio import dumps
from ..columns import RowValue
from ..memo import plan_facts

if TYPE_CHECKING:
    from ...model.entity import Entity
    from ...model.meta import FetchPlan, MetaClass
    from ...security.roles import Permissions

# An entity's id as loaded rows hold it (canonical UUID text, an integer or a string).
EntityId = str | int


def entity_tag(row: Mapping[str, RowValue], plan: "FetchPlan | None",
               permissions: "Permissions", session: Mapping[str, str],
               return_nulls: bool) -> str | None:
    """The strong ETag (quoted) of one entity row, or None without a version."""
    version = row.get("version")
    if version is None:
        return None
    return make_tag(row["id"], version, plan, permissions, session, return_nulls)


def make_tag(entity_id: EntityId, version: int, plan: "FetchPlan | None",
             permissions: "Permissions", session: Mapping[str, str], return_nulls: bool) -> str:
    """The strong ETag (quoted) of the entity ``entity_id`` at ``version``."""
    return tag_of(entity_id, version, tag_shape(plan, permissions, session, return_nulls))


def tag_shape(plan: "FetchPlan | None", permissions: "Permissions", session: Mapping[str, str],
              return_nulls: bool) -> str:
    """What besides the id shapes the body, as the tag's digest reads it (the
    same for every entity of one plan, caller and ``returnNulls``)."""
    return (f"\0{plan_key(plan)}\0{permissions_key(permissions, session)}\0"
            f"{'n' if return_nulls else ''}")


def tag_of(entity_id: EntityId, version: int, shape: str) -> str:
    """The strong ETag (quoted) of ``entity_id`` at ``version``, ``shape`` from ``tag_shape``."""
    digest = hashlib.blake2b(f"{entity_id}{shape}".encode("utf-8"), digest_size=9).hexdigest()
    return f'"{version}-{digest}"'


def tag_version(tag: str) -> int | None:
    """The version an ETag (unquoted, as Werkzeug parses it) stands for, or None."""
    head, dash, _ = tag.partition("-")
    if not dash or not head.isdigit() or len(head) > 18:
        return None
    return int(head)


def versioned(meta: "MetaClass", loading: "FetchPlan") -> "FetchPlan":
    """The loading plan with the version at its top, so the tag can be made
    (the serializer writes only what the request's plan holds)."""
    if "version" in loading.properties or "version" not in meta.properties:
        return loading
    facts = plan_facts(loading)
    cached: FetchPlan | None = facts.versioned
    if cached is None:
        cached = type(loading)(loading.name, loading.entity, {**loading.properties, "version": None})
        plan_facts(cached).loading = cached
        facts.versioned = cached
    return cached


def plan_key(plan: "FetchPlan | None") -> str:
    """Named plans by entity and name; inline plans by their whole shape."""
    if plan is None:
        return "_instance_name"
    facts = plan_facts(plan)
    key = facts.tag_key
    if key is None:
        key = facts.tag_key = dumps(plan.to_json())
    return key


def permissions_key(permissions: "Permissions", session: Mapping[str, str]) -> str:
    key: str | None = permissions.memo.get("etag")
    if key is None:
        key = permissions.memo["etag"] = hashlib.blake2b(
            dumps(permissions.to_json()).encode("utf-8") + repr(sorted(permissions.granted)).encode(),
            digest_size=9).hexdigest()
    if permissions.row_level_roles:
        return f"{key}:{session['username']}:{session['userId']}"
    return key


def version_is(model: "type[Entity]", expected: int | tuple[int, ...]) -> peewee.ColumnBase:
    """The condition a statement adds for an expected version: one version
    (optimistic locking), or a tuple of them (If-Match; none matches none)."""
    if isinstance(expected, tuple):
        return model.version.in_(expected) if expected else peewee.SQL("1 = 0")
    return model.version == expected
