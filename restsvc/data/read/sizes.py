"""The answer's size: how many JSON objects writing a page writes, bounded
before anything is written (``svc.rest.max-response-entities``).

A referenced row is written once per row that refers to it, so an answer can
grow as N^depth while the loaded rows grow linearly: the objects are counted
from what was loaded (flatrows.RawRows: references by foreign key,
compositions by parent, many-to-many members by link text), and only when a
bound worked out per level is above the limit.
"""
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from ..memo import Memo, Owned, owned
from .rows import RawRows, Values

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass
    from ...security.roles import Permissions

class Reference(NamedTuple):
    """A reference written along a plan: its name and the references written below it."""
    name: str
    inner: "tuple[Reference, ...]"


class Loaded(NamedTuple):
    """What was loaded for one reference attribute of a page."""
    key: Callable[[Values], Any]            # a row -> the key of what it refers to
    groups: Mapping[Any, Sequence[Values]]  # key -> the rows written for it
    rows: RawRows                           # those rows
    shared: bool                            # whether a row may be written for several


# The references written along a plan for one set of permissions.
_REFERENCES: "Memo[Owned[FetchPlan, tuple[Reference, ...]]]" = Memo("plan references", 1024)


def too_many(rows: RawRows, plan: "FetchPlan | None", permissions: "Permissions",
             limit: int) -> bool:
    """Whether writing ``rows`` along ``plan`` writes more than ``limit`` JSON
    objects (a referenced row counts once per row that refers to it). They
    are counted only when a bound worked out per level (how many rows, how
    many a row refers to at most) is above ``limit``."""
    refs = _references(rows.meta, plan, permissions) if plan is not None else ()
    return _bound(rows, refs)[0] > limit and _total(rows, refs) > limit


def _references(meta: "MetaClass", plan: "FetchPlan",
                permissions: "Permissions") -> tuple[Reference, ...]:
    """The plan's visible references, nested likewise, worked out once per
    plan and permissions."""
    return owned(_REFERENCES, plan, (id(permissions), permissions),
                 lambda: _find_references(meta, plan, permissions))


def _find_references(meta: "MetaClass", plan: "FetchPlan",
                     permissions: "Permissions") -> tuple[Reference, ...]:
    found = []
    levels = permissions.attribute_levels(meta.name)
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        # An embedded value is part of its entity, not an entity of the answer
        # (the references in it are counted as the loader reads them).
        if nested is not None and levels.get(name) and not prop.is_embedded:
            found.append(Reference(name, _references(prop.related, nested, permissions)))
    return tuple(found)


def _bound(rows: RawRows, refs: Sequence[Reference]) -> tuple[int, int]:
    """(at least as many objects as writing all of ``rows`` writes, at least as
    many as writing any one of them writes)."""
    total, most = len(rows), 1
    for ref in refs if rows else ():
        found = _loaded(rows, ref.name)
        if found is None:
            continue
        below, each = _bound(found.rows, ref.inner)
        widest = max(map(len, found.groups.values()), default=0)
        # a child is written under one row
        total += len(rows) * widest * each if found.shared else below
        most += widest * each
    return total, most


def _total(rows: RawRows, refs: Sequence[Reference]) -> int:
    """The objects writing all of ``rows`` writes."""
    total = len(rows)
    for ref in refs if rows else ():
        found = _loaded(rows, ref.name)
        if found is None:
            continue
        groups = found.groups
        if not found.shared and sum(map(len, groups.values())) == len(found.rows):
            total += _total(found.rows, ref.inner)      # each child written under one row
            continue
        each = _counts(found.rows, ref.inner)
        for value, times in Counter(map(found.key, rows)).items():
            shown = groups.get(value)
            if shown:
                total += times * (len(shown) if each is None
                                  else sum([each[id(member)] for member in shown]))
    return total


def _counts(rows: RawRows, refs: Sequence[Reference]) -> dict[int, int] | None:
    """id(row values) -> the objects writing the row writes, or None when every row writes one."""
    if not refs or not rows:
        return None
    counts = dict.fromkeys(map(id, rows), 1)
    for ref in refs:
        found = _loaded(rows, ref.name)
        if found is None:
            continue
        each = _counts(found.rows, ref.inner)
        for values in rows:
            shown = found.groups.get(found.key(values))
            if shown:
                counts[id(values)] += len(shown) if each is None \
                    else sum([each[id(member)] for member in shown])
    return counts


def _loaded(rows: RawRows, name: str) -> Loaded | None:
    """What was loaded for one reference attribute of ``rows``, or None when
    nothing was (its entity is not readable)."""
    if name in rows.members:        # link text -> the members
        lists, loaded = rows.shown_members(name)
        if not isinstance(loaded, RawRows):     # no members at all
            return None
        return Loaded(itemgetter(rows.names.index(name)), lists, loaded, True)
    if name in rows.children:       # the parent's id -> its children
        loaded, groups = rows.children[name]
        return Loaded(itemgetter(0), groups, loaded, False)
    if name in rows.targets:        # the foreign key -> the referenced row
        loaded, found = rows.targets[name]
        return Loaded(itemgetter(rows.names.index(name)),
                      {key: (values,) for key, values in found.items() if values is not None},
                      loaded, True)
    return None
