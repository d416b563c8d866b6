"""Loading the members of many-to-many associations along a fetch plan.

The owners' statement carries, per many-to-many attribute of the plan, one
more column: the JSON array of the member keys linked to the row (a
correlated aggregate over the link table, served by its index on the owner
column; ``member_column``). ``fill_members`` then loads the distinct
members of the whole page in one statement by id, under the target's
row-level rules like any referenced row, and gives each owner the list of its
visible members in id order. Owners with the same links share one list
(the link text is its key: a page of products with a few tag combinations
builds, and the serializer writes, each combination once), and a member of
several owners is one row they share.
"""
import json
from collections import Counter
from operator import itemgetter

import peewee

from ..db import is_sqlite
from .columns import converter


def member_column(database, prop):
    """The link keys of one owner row, as JSON text: on the owning side the
    column the link table's triggers keep (schema/linkkeys.py), in key order,
    NULL for none; on the inverse side a scalar subquery
    correlated with the owner's id (SQLite ``json_group_array`` gives ``[]``
    for none, PostgreSQL ``json_agg`` NULL). PostgreSQL sorts the keys; SQLite
    reads them in the order of the link table's (owner, member) index where it
    has one (``fill_members`` sorts them anyway), so owners with the same
    members have the same text."""
    link = prop.link
    if link.keys_field is not None:
        return link.keys_field
    key = "_member_sqlite" if is_sqlite(database) else "_member_pg"
    cached = prop.__dict__.get(key)
    if cached is None:
        through = link.through.alias()
        member = getattr(through, link.member_field.name)
        owner = getattr(through, link.owner_field.name)
        if is_sqlite(database):
            keys = peewee.fn.json_group_array(member)
        else:
            keys = peewee.Cast(peewee.fn.json_agg(member).order_by(member), "text")
        cached = through.select(keys).where(owner == link.owner_field.rel_field)
        setattr(prop, key, cached)
    return cached


def fill_members(access, prop, plan, rows, budget, load):
    """Each row's link text (``row[prop.name]``) -> the list of its members the
    caller may see, loaded along ``plan`` by ``load`` (the loader's select of
    rows by id: row-level rules, soft delete and the budget apply). The links
    shown count against ``budget`` as entities of the answer."""
    name = prop.name
    lists, _ = member_lists(access, prop, plan, Counter(map(itemgetter(name), rows)), budget,
                            load, itemgetter("id"))
    for row in rows:
        row[name] = lists[row[name]]


def member_lists(access, prop, plan, counts, budget, load, key_of):
    """Distinct link texts (each with how many owners have it) -> ({text: the
    visible members in key order, None: []}, the members loaded): ``load``
    reads the members by id, ``key_of`` gives a loaded member's id as the
    link keys name it once converted (flat pages load value tuples)."""
    counts.pop(None, None)
    texts = list(counts)
    parsed = json.loads(f"[{','.join(texts)}]") if texts else []
    if prop.link.keys_field is None and is_sqlite(access.database):
        # In the database's order, as the members' statement sorts them: SQLite
        # compares integers and text (UUIDs as hex) as Python does; PostgreSQL's
        # aggregate sorts them itself (text by the column's collation).
        for keys in parsed:
            keys.sort()
    convert = converter(prop.link.member_field)       # e.g. SQLite's hex UUIDs -> canonical
    if convert is not None:
        parsed = [[convert(key) for key in keys] for keys in parsed]
    wanted = set().union(*parsed)
    members = load(access, prop.target, plan, prop.target.model.id, wanted, budget=budget) \
        if wanted else []
    by_key = {key_of(member): member for member in members}
    lists, links = {None: []}, 0
    for text, keys in zip(texts, parsed):
        shown = lists[text] = [by_key[key] for key in keys if key in by_key]
        links += len(shown) * counts[text]
    if budget is not None and links > len(members):
        budget.take(links - len(members))     # each link is an entity of the answer
    return lists, members
