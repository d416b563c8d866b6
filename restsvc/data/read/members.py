"""Loading the members of many-to-many associations along a fetch plan.

The owners' statement carries, per many-to-many attribute of the plan, one
more column: the JSON array of the member keys linked to the row
(``member_column``): on the owning side the column the link table's
triggers keep on the owner's row (schema/linkkeys.py), on the inverse side a
correlated aggregate over the link table. ``load_members`` then loads the
distinct members of the whole page in one statement by id, under the
target's row-level rules like any referenced row; each owner gets the list of
its visible members in id order. Owners with the same links share one list
(the link text is its key: a page of products with a few tag combinations
builds, and the serializer writes, each combination once), a member of
several owners is one row they share, and each distinct text is parsed once
per process (``parsed_keys``).
"""
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from operator import mul
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

import peewee

from ...db import is_sqlite
from ..columns import converter
from ..memo import column_facts
from .request import Budget, By

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, Link, MetaClass, MetaProperty
    from ..access import Access

# The link keys of one owner row as the database gives them: the JSON text of
# an array of member keys, None for none.
LinkText = str | None
# A member's key: its id as loaded rows hold it (canonical UUID text, an
# integer or a string).
Key = str | int
# A loaded member: a row of the loader (a dict) or a flat page's value tuple.
Member = TypeVar("Member")
Loaded = TypeVar("Loaded", covariant=True)


class LoadByIds(Protocol[Loaded]):
    """The loader's select of rows by id (``loader._by_ids`` and its kinds):
    the rows of ``meta`` along ``plan`` whose ``key_field`` is one of ``ids``."""

    def __call__(self, access: "Access", meta: "MetaClass", plan: "FetchPlan",
                 key_field: "peewee.Field[Any]", ids: set[Key], by: By, /) -> Sequence[Loaded]: ...


class LoadedMembers(NamedTuple, Generic[Member]):
    """What ``load_members`` loaded for the distinct link texts of a page."""
    keys: dict[LinkText, list[Key]]   # each text's member keys
    by_key: dict[Key, Member]   # the members the caller sees, by key
    members: Sequence[Member]   # the members loaded
    complete: bool              # whether the caller sees every member the texts name


def _link(prop: "MetaProperty") -> "Link":
    link = prop.link
    assert link is not None     # a many-to-many attribute's
    return link


def member_column(database: peewee.Database, prop: "MetaProperty") -> "peewee.Node":
    """The link keys of one owner row, as JSON text: on the owning side the
    column the link table's triggers keep (schema/linkkeys.py), in key order,
    NULL for none; on the inverse side a scalar subquery
    correlated with the owner's id (SQLite ``json_group_array`` gives ``[]``
    for none, PostgreSQL ``json_agg`` NULL). PostgreSQL sorts the keys; SQLite
    reads them in the order of the link table's (owner, member) index where it
    has one (``parsed_keys`` sorts them anyway), so owners with the same
    members have the same text."""
    link = _link(prop)
    keys_field: peewee.Node | None = link.keys_field   # (the stubs read a field as its value)
    if keys_field is not None:
        return keys_field
    sqlite, facts = is_sqlite(database), column_facts(prop)
    cached: peewee.Node | None = facts.member_column.get(sqlite)
    if cached is None:
        through = link.through.alias()
        member = getattr(through, link.member_field.name)
        owner = getattr(through, link.owner_field.name)
        keys: peewee.ColumnBase
        if sqlite:
            keys = peewee.fn.json_group_array(member)
        else:
            keys = peewee.Cast(peewee.fn.json_agg(member).order_by(member), "text")
        cached = facts.member_column[sqlite] = \
            through.select(keys).where(owner == link.owner_field.rel_field)
    return cached


def shown_lists(counts: Mapping[LinkText, int], keys: Mapping[LinkText, list[Key]],
                by_key: Mapping[Key, Member]) -> dict[LinkText, list[Member]]:
    """{link text: the members of it the caller sees, in key order, None: []}."""
    lists: dict[LinkText, list[Member]] = {None: []}
    for text in counts:
        lists[text] = [by_key[key] for key in keys[text] if key in by_key]
    return lists


def load_members(access: "Access", prop: "MetaProperty", plan: "FetchPlan",
                 counts: Counter[LinkText], budget: Budget | None, load: LoadByIds[Member],
                 key_of: Callable[[Member], Key]) -> LoadedMembers[Member]:
    """The members of the distinct link texts ``counts`` names (each with how
    many owners have it; None, no links, is dropped from it): ``LoadedMembers``
    (a tuple: flatrows keeps it after the counts).
    ``load`` reads the members by id, ``key_of`` gives a loaded member's id as
    the keys name it (flat pages load value tuples). Each link shown is an
    entity of the answer: the links beyond the members loaded are taken from
    ``budget``."""
    counts.pop(None, None)
    keys = parsed_keys(access.database, prop, counts)
    wanted: set[Key] = set().union(*map(keys.__getitem__, counts))
    target = prop.related
    members = load(access, target, plan, target.model.id, wanted, By(budget=budget)) \
        if wanted else []
    by_key = {key_of(member): member for member in members}
    complete = len(by_key) == len(wanted)
    if budget is not None:
        if complete:
            links = sum(map(mul, map(len, map(keys.__getitem__, counts)), counts.values()))
        else:
            links = sum(sum(key in by_key for key in keys[text]) * count
                        for text, count in counts.items())
        if links > len(members):
            budget.take(links - len(members))
    return LoadedMembers(keys, by_key, members, complete)


_PARSED_MAX = 4096      # link texts kept per attribute and kind of database


def parsed_keys(database: peewee.Database, prop: "MetaProperty",
                texts: Mapping[LinkText, int]) -> dict[LinkText, list[Key]]:
    """{link text: its member keys}, for at least ``texts`` (a dict): in the database's
    order and converted as loaded rows hold ids (SQLite's hex UUIDs ->
    canonical). A text always means the same keys, so each is parsed once
    and kept (a page of owners with a few member sets parses nothing)."""
    sqlite = is_sqlite(database)
    facts = column_facts(prop)
    known: dict[LinkText, list[Key]] | None = facts.parsed_keys.get(sqlite)
    if known is None or len(known) > _PARSED_MAX:
        known = facts.parsed_keys[sqlite] = {}  # a new dict: another thread may read the old one
    if texts.keys() <= known.keys():
        return known
    missing = [text for text in texts if text is not None and text not in known]
    parsed: list[list[Key]] = json.loads(f"[{','.join(missing)}]")
    link = _link(prop)
    if sqlite and link.keys_field is None:
        # In the database's order, as the members' statement sorts them: SQLite
        # compares integers and text (UUIDs as hex) as Python does. The stored
        # keys (linkkeys.py) and PostgreSQL's aggregate are sorted already.
        for keys in parsed:
            keys.sort()
    convert = converter(link.member_field)       # e.g. SQLite's hex UUIDs -> canonical
    if convert is not None:
        parsed = [[convert(key) for key in keys] for keys in parsed]
    known.update(zip(missing, parsed))
    return known
