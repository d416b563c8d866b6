"""How a plan is loaded (``raw_kind``), and pages of rows written as answers.

``raw_kind`` says what a loading plan loads beside its entity's own columns:
FLAT (the columns of the entity's own table and of its embedded values),
MEMBERS (and the members of many-to-many attributes along flat plans),
NESTED (and to-one references, compositions and transient attributes:
nestedrows.py). Answers write the rows (rows.py) without Python objects in
between: each column's database value as JSON text by one function worked
out once per column (rawvalues.py), each row by a writer compiled once per
entity, plan shape, permissions and ``returnNulls`` (rowwriters.py), which
splices in what is written once per answer for many rows (``_texts``):
permissions decide there (hidden attributes and instance names built from
them are left out), and the row-level roles and soft-delete rules were
applied by the query.
"""
from collections import Counter
from collections.abc import Callable
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ...jsonio import RawJson, raw_array
from ..columns import row_id as _row_id
from ..memo import UNKNOWN, plan_facts
from .members import load_members
from .nestedrows import Load, Texts, nested_texts
from .rows import Key, Members, RawRows
from ..answer.rowwriters import row_writer as _writer, shows_reference as _shows_members

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass, MetaProperty
    from ...security.roles import Permissions
    from ..access import Access
    from .request import Budget

FLAT, MEMBERS, NESTED = "flat", "members", "nested"
# Whether the caller is shown (or may read) what a reference attribute refers to.
Shows = Callable[["MetaClass", "MetaProperty", "Permissions"], bool]


def raw_kind(meta: "MetaClass", loading: "FetchPlan") -> str | None:
    """How rows of ``loading`` (a loading plan) are loaded, kept on it: FLAT
    (columns of the entity's table and of its embedded values), MEMBERS
    (those, and many-to-many members along FLAT or MEMBERS plans), NESTED
    (besides those, to-one references or compositions, also inside embedded
    values, or transient attributes), or None: a plan no fetch plan makes
    (a reference without a plan of its own; the loader refuses it)."""
    facts = plan_facts(loading)
    kind: str | None = facts.raw_kind
    if kind is UNKNOWN:
        kinds = {_property_kind(meta.properties[name], nested)
                 for name, nested in loading.properties.items()}
        if None in kinds:
            kind = None
        else:
            kind = NESTED if NESTED in kinds else MEMBERS if MEMBERS in kinds else FLAT
        facts.raw_kind = kind
    return kind


def is_flat(meta: "MetaClass", loading: "FetchPlan") -> bool:
    """Whether ``loading`` is loaded by one statement (and its members' own):
    without references, compositions or transient attributes."""
    return raw_kind(meta, loading) in (FLAT, MEMBERS)


def _property_kind(prop: "MetaProperty", nested: "FetchPlan | None") -> str | None:
    if prop.getter is not None:
        return NESTED
    if prop.link is not None:
        return MEMBERS if nested is not None and is_flat(prop.related, nested) else None
    if prop.is_reference:
        to_one = prop.field is not None and not prop.is_collection
        composition = prop.is_collection and prop.back_field is not None
        if nested is None or not (to_one or composition):
            return None
        return NESTED if raw_kind(prop.related, nested) is not None else None
    if prop.is_embedded:        # its columns, and to-one references inside it
        if nested is None:
            return None
        kinds = {_part_kind(prop.related.properties[part], part_nested)
                 for part, part_nested in nested.properties.items()}
        return None if None in kinds else NESTED if NESTED in kinds else FLAT
    return FLAT if nested is None and _column(prop) else None


def _part_kind(part: "MetaProperty", nested: "FetchPlan | None") -> str | None:
    """How a part of an embedded value is loaded: a column, or a to-one
    reference along a raw plan (NESTED)."""
    if nested is None:
        return FLAT if _column(part) else None
    if part.is_reference and part.field is not None and not part.is_collection:
        return NESTED if raw_kind(part.related, nested) is not None else None
    return None


def _column(prop: "MetaProperty") -> bool:
    return (prop.field is not None and prop.persistent and not prop.is_collection
            and not prop.is_reference and prop.getter is None)


def fill_flat_members(access: "Access", rows: RawRows, budget: "Budget | None", load: Load,
                      shows: Shows = _shows_members) -> None:
    """The members of each many-to-many attribute of a page the caller may
    see (its attribute visible, its entity readable; ``shows`` decides),
    loaded by ``load`` (the loader's select by id): ``rows.members``."""
    meta = rows.meta
    for name, position in rows.links:
        prop = meta.properties[name]
        if not shows(meta, prop, access.permissions):
            continue
        counts: Counter[Key] = Counter(map(itemgetter(position), rows))
        nested = rows.loading.properties[name]
        assert nested is not None       # a many-to-many attribute is loaded along a plan
        found = load_members(access, prop, nested, counts, budget, load, _row_id(prop.related))
        rows.members[name] = Members(counts, found.keys, found.by_key, found.members,
                                     found.complete)


def write_flat(meta: "MetaClass", rows: RawRows, plan: "FetchPlan | None",
               permissions: "Permissions", return_nulls: bool = False) -> RawJson:
    """A JSON array of the entities of ``rows`` along ``plan``."""
    write = _writer(meta, rows, plan, permissions, return_nulls)
    texts = _texts(rows, plan, permissions, return_nulls)
    if texts is None:
        return raw_array(map(write, rows))
    return raw_array(map(write, rows, repeat(texts)))


def write_flat_each(meta: "MetaClass", rows: RawRows, plan: "FetchPlan | None",
                    permissions: "Permissions",
                    return_nulls: bool = False) -> list[tuple[Any, RawJson]]:
    """Each entity of ``rows`` along ``plan``: [(id, JSON text)] in the rows'
    order, the ids as the loader converts them."""
    write, row_id = _writer(meta, rows, plan, permissions, return_nulls), _row_id(meta)
    texts = _texts(rows, plan, permissions, return_nulls)
    return [(row_id(values), RawJson(write(values, texts))) for values in rows]


def _texts(rows: RawRows, plan: "FetchPlan | None", permissions: "Permissions",
           return_nulls: bool) -> Texts | None:
    """What the rows' writer splices in (rowwriters.py), or None: nothing."""
    texts = _member_texts(rows, plan, permissions, return_nulls) \
        if rows.members and plan is not None else None
    if rows.nested:
        return {**(texts or {}), **nested_texts(rows, plan, permissions, return_nulls, _texts)}
    return texts


def _member_texts(rows: RawRows, plan: "FetchPlan", permissions: "Permissions",
                  return_nulls: bool) -> Texts:
    """Per many-to-many attribute shown: link text -> the JSON array of its
    members the caller sees, in key order. Each member and each distinct set
    of members is written once."""
    texts: Texts = {}
    for name, found in rows.members.items():
        written: dict[Key, str] = {}
        members, keys = found.rows, found.keys
        if isinstance(members, RawRows) and members:
            target, nested = rows.meta.properties[name].related, plan.properties[name]
            write = _writer(target, members, nested, permissions, return_nulls)
            inner = _member_texts(members, nested, permissions, return_nulls) \
                if members.members and nested is not None else None
            written = {key: write(values) if inner is None else write(values, inner)
                       for key, values in found.by_key.items()}
        if found.complete:
            text_of = written.__getitem__
            arrays = {text: f"[{','.join(map(text_of, keys[text]))}]" for text in found.counts}
        else:       # some are hidden (row-level roles) or gone
            arrays = {text: f"[{','.join([written[key] for key in keys[text] if key in written])}]"
                      for text in found.counts}
        arrays[None] = "[]"
        texts[name] = arrays
    return texts
