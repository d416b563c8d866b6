"""The one row shape: the database's value tuples of a load, and pages of them.

Every load gives its rows as the database gives them (``RawRows``), with
what was loaded for them, and ``raw_kind`` says how a plan is loaded: FLAT
(the columns of the entity's own table and of its embedded values), MEMBERS
(and the members of many-to-many attributes along flat plans), NESTED (and
to-one references, compositions and transient attributes: nestedrows.py).
Answers write the rows without Python objects in between: each column's
database value as JSON text by one function worked out once per column
(rawvalues.py), each row by a writer compiled once per entity, plan shape,
permissions and ``returnNulls`` (rowwriters.py); permissions decide there
(hidden attributes and instance names built from them are left out), and
the row-level roles and soft-delete rules were applied by the query. Python
code reads the same rows converted (records.py).
"""
from collections import Counter
from typing import Any
from itertools import repeat
from operator import itemgetter

from ...jsonio import RawJson, raw_array
from ..memo import UNKNOWN, plan_facts
from ..columns import row_id as _row_id
from .members import load_members, shown_lists
from .nestedrows import nested_texts
from ..answer.rowwriters import row_writer as _writer, shows_reference as _shows_members

FLAT, MEMBERS, NESTED = "flat", "members", "nested"


class RawRows(list):
    """The database's value tuples of a raw plan, in the loader's column order,
    and what was loaded for them. ``links``: the plan's many-to-many
    attributes, each the position of its link text; ``members``: what
    ``fill_flat_members`` loaded for them; ``targets``: per to-one reference,
    (the referenced rows, foreign key -> the row or None); ``children``: per
    composition, (the children's rows, the parent's id -> its children);
    ``transients``: the names of the values worked out after loading, each
    row's last ones (nestedrows.py)."""

    def __init__(self, values: Any, meta: Any, loading: Any, names: tuple[str, ...],
                 converting: Any) -> None:
        super().__init__(values)
        self.meta, self.loading = meta, loading
        self.names, self.converting = names, converting
        self.links = _links(meta, loading, names)
        self.members: dict[str, Any] = {}
        self.nested = False     # loaded with what the caller may read (nestedrows.py)
        self.targets: dict[str, Any] = {}
        self.children: dict[str, Any] = {}
        self.transients: tuple[str, ...] = ()
        self.view: Any = None   # what transient attributes see of a row (nestedrows.py)
        self._shown: dict[str, Any] = {}

    def shown_members(self, name: str) -> tuple[dict[Any, list[Any]], "RawRows"]:
        """(link text -> the members the caller sees, in key order; the
        members loaded) of one many-to-many attribute, worked out once."""
        found = self._shown.get(name)
        if found is None:
            counts, keys, by_key, members, _ = self.members[name]
            found = self._shown[name] = (shown_lists(counts, keys, by_key), members)
        return found

    def extend(self, more):
        """Another chunk of the same load (loader._by_ids): its rows and what
        was loaded for them (each of which may be an empty list)."""
        super().extend(more)
        for name, theirs in more.members.items():
            mine = self.members.get(name)
            self.members[name] = theirs if mine is None else _joined_members(mine, theirs)
        for loaded, theirs in ((self.targets, more.targets), (self.children, more.children)):
            for name, (rows, by_key) in theirs.items():
                mine = loaded.get(name)
                loaded[name] = (rows, by_key) if mine is None \
                    else (_joined(mine[0], rows), {**mine[1], **by_key})


def _joined_members(mine, theirs):
    """What ``fill_flat_members`` loaded for two chunks of one load."""
    counts, keys, by_key, members, complete = mine
    more_counts, more_keys, more_by_key, more_members, more_complete = theirs
    return (counts + more_counts, {**keys, **more_keys}, {**by_key, **more_by_key},
            _joined(members, more_members), complete and more_complete)


def _joined(rows, more):
    """The rows of two chunks of one load."""
    if not isinstance(rows, RawRows):
        return more
    if isinstance(more, RawRows):
        rows.extend(more)
    return rows


class KeyRows:
    """What ``cursors.sort_key`` reads of a page: its last row, the rows from
    the end; of a row only the columns asked for are converted."""

    def __init__(self, raw: "RawRows") -> None:
        self._raw = raw

    def __getitem__(self, index):
        return _KeyRow(self._raw, index)

    def __reversed__(self):
        return (_KeyRow(self._raw, index) for index in range(len(self._raw) - 1, -1, -1))


class _KeyRow:
    def __init__(self, raw, index):
        self._values, self._columns = raw[index], _key_columns(raw)

    def __contains__(self, name):
        return name in self._columns

    def __getitem__(self, name):
        position, convert = self._columns[name]
        value = self._values[position]
        return value if value is None or convert is None else convert(value)


def _key_columns(raw):
    """Column name -> (position, converter or None) of a flat plan's rows."""
    facts = plan_facts(raw.loading)
    found = facts.key_columns
    if found is None:
        convert = dict(raw.converting)
        found = facts.key_columns = {
            name: (position, convert.get(position)) for position, name in enumerate(raw.names)}
    return found


def raw_kind(meta: Any, loading: Any) -> str | None:
    """How rows of ``loading`` (a loading plan) are loaded, kept on it: FLAT
    (columns of the entity's table and of its embedded values), MEMBERS
    (those, and many-to-many members along FLAT or MEMBERS plans), NESTED
    (besides those, to-one references or compositions, also inside embedded
    values, or transient attributes), or None: a plan no fetch plan makes
    (a reference without a plan of its own; the loader refuses it)."""
    facts = plan_facts(loading)
    kind = facts.raw_kind
    if kind is UNKNOWN:
        kinds = {_property_kind(meta.properties[name], nested)
                 for name, nested in loading.properties.items()}
        if None in kinds:
            kind = None
        else:
            kind = NESTED if NESTED in kinds else MEMBERS if MEMBERS in kinds else FLAT
        facts.raw_kind = kind
    return kind


def is_flat(meta: Any, loading: Any) -> bool:
    """Whether ``loading`` is loaded by one statement (and its members' own):
    raw, without references, compositions or transient attributes."""
    return raw_kind(meta, loading) in (FLAT, MEMBERS)


def _property_kind(prop, nested):
    if prop.getter is not None:
        return NESTED
    if prop.link is not None:
        return MEMBERS if nested is not None and is_flat(prop.target, nested) else None
    if prop.is_reference:
        to_one = prop.field is not None and not prop.is_collection
        composition = prop.is_collection and prop.back_field is not None
        if nested is None or not (to_one or composition):
            return None
        return NESTED if raw_kind(prop.target, nested) is not None else None
    if prop.is_embedded:        # its columns, and to-one references inside it
        if nested is None:
            return None
        kinds = {_part_kind(prop.target.properties[part], part_nested)
                 for part, part_nested in nested.properties.items()}
        return None if None in kinds else NESTED if NESTED in kinds else FLAT
    return FLAT if nested is None and _column(prop) else None


def _part_kind(part, nested):
    """How a part of an embedded value is loaded: a column, or a to-one
    reference along a raw plan (NESTED)."""
    if nested is None:
        return FLAT if _column(part) else None
    if part.is_reference and part.field is not None and not part.is_collection:
        return NESTED if raw_kind(part.target, nested) is not None else None
    return None


def _column(prop):
    return (prop.field is not None and prop.persistent and not prop.is_collection
            and not prop.is_reference and prop.getter is None)


def _links(meta, loading, names):
    """(name, position of the link text) of the plan's many-to-many attributes."""
    facts = plan_facts(loading)
    links = facts.links
    if links is None:
        links = facts.links = [(name, names.index(name)) for name in loading.properties
                                       if meta.properties[name].link is not None]
    return links


def fill_flat_members(access, rows, budget, load, shows=_shows_members):
    """The members of each many-to-many attribute of a flat page the caller
    may see (its attribute visible, its entity readable; ``shows`` decides),
    loaded as a flat page too by ``load`` (the loader's select by id, raw):
    ``rows.members``."""
    meta = rows.meta
    for name, position in rows.links:
        prop = meta.properties[name]
        if not shows(meta, prop, access.permissions):
            continue
        counts = Counter(map(itemgetter(position), rows))
        rows.members[name] = (counts,) + load_members(
            access, prop, rows.loading.properties[name], counts, budget, load,
            _row_id(prop.target))


def write_flat(meta: Any, rows: "RawRows", plan: Any, permissions: Any,
               return_nulls: bool = False) -> RawJson:
    """A JSON array of the entities of ``rows`` (RawRows) along ``plan``."""
    write = _writer(meta, rows, plan, permissions, return_nulls)
    texts = _texts(rows, plan, permissions, return_nulls)
    if texts is None:
        return raw_array(map(write, rows))
    return raw_array(map(write, rows, repeat(texts)))


def write_flat_each(meta: Any, rows: "RawRows", plan: Any, permissions: Any,
                    return_nulls: bool = False) -> list[tuple[Any, RawJson]]:
    """Each entity of ``rows`` (RawRows) along ``plan``: [(id, JSON text)] in
    the rows' order, the ids as the loader converts them."""
    write, row_id = _writer(meta, rows, plan, permissions, return_nulls), _row_id(meta)
    texts = _texts(rows, plan, permissions, return_nulls)
    return [(row_id(values), RawJson(write(values, texts))) for values in rows]


def _texts(rows, plan, permissions, return_nulls):
    """What the rows' writer splices in (rowwriters.py), or None: nothing."""
    texts = _member_texts(rows, plan, permissions, return_nulls) \
        if rows.members and plan is not None else None
    if rows.nested:
        return {**(texts or {}), **nested_texts(rows, plan, permissions, return_nulls, _texts)}
    return texts


def _member_texts(rows, plan, permissions, return_nulls):
    """Per many-to-many attribute shown: link text -> the JSON array of its
    members the caller sees, in key order. Each member and each distinct set
    of members is written once."""
    texts = {}
    for name, (counts, keys, by_key, members, complete) in rows.members.items():
        written = {}
        if members:
            target, nested = rows.meta.properties[name].target, plan.properties[name]
            write = _writer(target, members, nested, permissions, return_nulls)
            inner = _member_texts(members, nested, permissions, return_nulls) \
                if members.members else None
            written = {key: write(values) if inner is None else write(values, inner)
                       for key, values in by_key.items()}
        if complete:
            text_of = written.__getitem__
            arrays = {text: f"[{','.join(map(text_of, keys[text]))}]" for text in counts}
        else:       # some are hidden (row-level roles) or gone
            arrays = {text: f"[{','.join([written[key] for key in keys[text] if key in written])}]"
                      for text in counts}
        arrays[None] = "[]"
        texts[name] = arrays
    return texts


def tag_row(rows: "RawRows") -> dict[str, Any]:
    """What ``etags.entity_tag`` reads of the first row of ``rows``: id and
    version, converted as the loader converts them."""
    values, version = rows[0], _key_columns(rows).get("version")
    return {"id": _row_id(rows.meta)(values),
            "version": None if version is None else values[version[0]]}
