"""Row rules on writes: the ``writes`` of row-level roles (security/roles.py),
checked as steps of the one write path (writer.py).

A rule is checked in SQL on the stored row, inside the write transaction:
before the statement on the row as it is (an update's row as it was, a
delete's row), after it on the row as it is now stored (a create, an
update), so a condition follows references by the same joins reads use and
sees exactly what was written. A refusal is 403 and the write transaction
rolls back: nothing of the request is stored, in a bulk request neither.
Python predicates get the same rows as model instances.

A write of a composition child (an order's line) on its own is a change of
its owner: the owner's ``update`` rule is checked on the owner row,
transitively.
"""
import functools
import operator
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from ...db import is_sqlite
from ...errors import ApiError, Forbidden
from ...model.metadata import MetadataError
from ..access import NO_USER_ID, Access
from ..columns import among
from ..read.filters import parse_filter
from ..read.query import EntityQuery

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, Metadata, MetaProperty
    from ...security.registry import RoleRegistry
    from ...security.roles import WriteRule

WRITE_ACTIONS = ("create", "update", "delete")


def check_declarations(metadata: "Metadata", roles: "RoleRegistry") -> None:
    """Check every write rule of the row-level roles now, conditions parsed
    as a caller's would be: a mistake stops startup instead of answering
    writes 400."""
    session = {"username": "", "userId": NO_USER_ID}
    for role in roles.row_level.values():
        for entity_name, actions in role.writes.items():
            meta = metadata.entities.get(entity_name)
            if meta is None:
                raise MetadataError(f"row-level role {role.code}: unknown entity {entity_name}")
            if not isinstance(actions, dict) or not set(actions) <= set(WRITE_ACTIONS):
                raise MetadataError(f"row-level role {role.code}: write rules of {entity_name} "
                                    "must map create, update or delete to rules")
            for rules in actions.values():
                for rule in rules if isinstance(rules, (tuple, list)) else [rules]:
                    _check_rule(role.code, meta, rule, session)


def _check_rule(code: str, meta: "MetaClass", rule: object, session: dict[str, str]) -> None:
    if callable(rule):
        return
    if not isinstance(rule, dict):
        raise MetadataError(f"row-level role {code}: a write rule of {meta.name} must be a "
                            "search filter or a predicate(row, session)")
    try:
        parse_filter(meta, rule, None, session)
    except ApiError as exc:
        raise MetadataError(f"row-level role {code}: write rule of {meta.name}: "
                            f"{exc.details}") from None


def check_rows(access: Access, meta: "MetaClass", action: str, ids: Collection[str | int | None],
               before: bool = False, owners: bool = True, _seen: tuple[str, ...] = ()) -> None:
    """403 unless every row of ``meta`` in ``ids`` meets the caller's rules on
    ``action``, and (``owners``) the owners of those rows their ``update``
    rules. Children written with their owner leave ``owners`` out: the
    owner's own save checks the owner, by its create or update rule."""
    permissions = access.permissions
    keys = [key for key in dict.fromkeys(ids) if key is not None]
    if not keys or not permissions.write_checked(meta.name):
        return
    model = meta.model
    if before and not is_sqlite(access.database):
        # The row is checked as it stays until the statement: no concurrent
        # writer changes it in between (SQLite: the write lock is held already).
        list(model.select(model.id).where(among(model.id, keys)).for_update())
    rules = permissions.write_rules(meta.name, action)
    if rules and not _meets(access, meta, rules, keys):
        raise refused(meta, action)
    for owner, back_field in permissions.write_owners(meta.name) if owners else ():
        if owner.name in _seen:
            continue
        owner_ids = list(model.select(back_field).where(among(model.id, keys)).distinct().scalars())
        check_rows(access, owner, "update", owner_ids, before, True, _seen + (meta.name,))


def check_members(access: Access, prop: "MetaProperty", owner_id: str | int,
                  member_ids: Collection[str | int], creating: bool) -> None:
    """A many-to-many membership change is an update of the owning row (its
    own save checks that) and of each member whose link comes or goes: seen
    from the other side (Tag.products is Product.tags), it changes them."""
    target = prop.related
    if not access.permissions.write_checked(target.name):
        return
    link = prop.link
    assert link is not None     # a many-to-many attribute's
    stored: set[str | int] = set()
    if not creating:        # the links the save replaces: those to members the caller sees
        links = link.through.select(link.member_field).where(link.owner_field == owner_id)
        visible = EntityQuery(target, access).visible_ids(target)
        if visible is not None:
            links = links.where(link.member_field.in_(visible))
        stored = {target.row_id(key) for key in links.scalars()}
    check_rows(access, target, "update", list(stored.symmetric_difference(member_ids)))


def refused(meta: "MetaClass", action: str) -> Forbidden:
    """The reference's answer to a predicate policy's denial (AccessDeniedException)."""
    return Forbidden("Forbidden", f"resource: {meta.name}, type: entity, action: {action}")


def _meets(access: Access, meta: "MetaClass", rules: "Collection[WriteRule]",
           ids: list[str | int]) -> bool:
    model = meta.model
    conditions: list[Mapping[str, object]] = [rule for rule in rules if not callable(rule)]
    if conditions:
        query = EntityQuery(meta, access)
        where = functools.reduce(operator.and_, (
            query.compile(parse_filter(meta, spec, None, access.session)) for spec in conditions),
            among(model.id, ids))
        # To-one joins and EXISTS for collections: one result row per row.
        if query.apply_joins(model.select(model.id)).where(where).count() < len(ids):
            return False
    predicates = [rule for rule in rules if callable(rule)]
    if predicates:
        for row in model.select().where(among(model.id, ids)):
            if not all(predicate(row, access.session) for predicate in predicates):
                return False
    return True
