"""To-one references, compositions and transient attributes of raw rows.

Rows whose plan has them (``flatrows.raw_kind``: NESTED), and every load for
Python code, are loaded as the database's value tuples at every level: each
reference and composition of a page costs one statement for all its rows
(the loader's select by id: the target's row-level roles and row rules,
soft delete as for any reference, the answer's budget), and its rows are
kept beside the page's: a to-one reference's rows by the foreign key (also
inside an embedded value: ``address.country``), a composition's children by
their parent's id, in the order the loader gives them. Transient attributes
are worked out while loading; a getter sees its row through a ``RawView``
(only what it reads is converted). Writing (``nested_texts``) writes each
referenced row once per answer, as the text its foreign key names, and each
composition's array once per parent; the row writers splice them in.
"""
from typing import Any
from operator import itemgetter

from ..columns import converter, row_id
from .request import By
from ..memo import Memo, Owned, owned
from ..answer.names import NAMES, raw_namer
from ..answer.rowwriters import positions, row_writer, shows_reference

PARENT = "\0parent"     # the owner's id on composition children while loading
# View classes, one per entity and set of loaded columns (inline plans choose them).
_VIEWS: "Memo[Owned[Any, type]]" = Memo("raw views", 1024)


def readable(meta, prop, permissions):
    """Whether the loader loads what a reference attribute refers to: its
    entity readable (the attribute may be hidden: a transient attribute may
    read it)."""
    return permissions.can(prop.target.name, "read")


def fill_nested(access, rows, budget, load):
    """The to-one references and compositions of ``rows`` (flatrows.RawRows)
    the caller may read, loaded by ``load`` (the loader's select by id, raw),
    then the rows' transient attributes. Their many-to-many members are the
    loader's (``flatrows.fill_flat_members``, shown or not)."""
    meta, permissions = rows.meta, access.permissions
    for name, nested in rows.loading.properties.items():
        prop = meta.properties[name]
        if nested is None or not prop.is_reference or prop.link is not None \
                or not readable(meta, prop, permissions):
            continue            # an entity the caller may not read: left out, as the loader does
        if prop.is_collection:
            rows.children[name] = _children(access, rows, prop, nested, budget, load)
        else:
            rows.targets[name] = _targets(access, rows, prop, nested, budget, load)
    for name, part, nested in embedded_references(meta, rows.loading):
        if readable(meta, part, permissions):
            rows.targets[name] = _targets(access, rows, part, nested, budget, load, name)
    getters = [(name, meta.properties[name].getter) for name in rows.loading.properties
               if meta.properties[name].getter is not None]
    if getters:
        view = _view_of(rows)
        if len(getters) == 1:
            (_, get), = getters
            rows[:] = [values + (get(_seen(view, rows, values)),) for values in rows]
        else:
            rows[:] = [values + tuple([get(seen) for _, get in getters])
                       for values in rows for seen in (_seen(view, rows, values),)]
        rows.transients = tuple(name for name, _ in getters)


def embedded_references(meta, plan):
    """(column name, part, the part's plan) of each to-one reference inside
    an embedded value of ``plan`` (``address.country``)."""
    found = []
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        if nested is not None and prop.is_embedded:
            found += [(f"{name}.{part}", prop.target.properties[part], part_nested)
                      for part, part_nested in nested.properties.items()
                      if part_nested is not None]
    return found


def _targets(access, rows, prop, nested, budget, load, column=None):
    """(the referenced rows, foreign key -> its row or None when the caller
    cannot see it) of one to-one reference (in the column ``column``, by
    default the attribute's): the keys converted as the loader converts
    them, each distinct key once."""
    position, convert = rows.names.index(column or prop.name), converter(prop.field)
    keys = set(map(itemgetter(position), rows))
    keys.discard(None)
    ids = {key: key if convert is None else convert(key) for key in keys}
    wanted = set(ids.values())
    wanted.discard(None)
    target = prop.target
    found = load(access, target, nested, target.model.id, wanted,
                 By(budget=budget, with_deleted=True))
    # A row whose id is stored as the key is: its id converts as the key did.
    # Others (none, unless the keys are stored in other forms) by the converted ids.
    by_raw, by_id, by_key = {values[0]: values for values in found}, None, {}
    for key, converted in ids.items():
        values = by_raw.get(key)
        if values is None and converted is not None:
            if by_id is None:
                read_id = row_id(target)
                by_id = {read_id(row): row for row in found}
            values = by_id.get(converted)
        by_key[key] = values
    return found, by_key


def _children(access, rows, prop, nested, budget, load):
    """(the children's rows, the parent's id as loaded -> its children in the
    loader's order) of one composition."""
    ids = list(map(row_id(rows.meta), rows))
    back = prop.back_field
    found = load(access, prop.target, nested, back, set(ids), By(parent_column=back, budget=budget))
    grouped = {}
    if found:
        # A child's parent as the loader converts it: the same value as its
        # parent's id is that id (converted above), any other converted once.
        parent, convert = found.names.index(PARENT), converter(back)
        owners = dict(zip(map(itemgetter(0), rows), ids))
        for values in found:
            key = values[parent]
            owner = owners.get(key)
            if owner is None:
                owner = owners[key] = key if convert is None else convert(key)
            grouped.setdefault(owner, []).append(values)
    return found, {values[0]: grouped[key] for values, key in zip(rows, ids) if key in grouped}


def nested_texts(rows, plan, permissions, return_nulls, texts_of):
    """What the row writer of ``rows`` splices in (rowwriters.py) for its
    to-one references and compositions: per reference of ``plan`` written
    (its attribute visible, its entity readable), each referenced row's text
    by foreign key, or each parent's array of children by its id; per
    reference of the instance name, each referenced row's instance name by
    foreign key. ``plan`` None: only the names. ``texts_of``: the same for
    the rows of a level below, many-to-many members included (flatrows)."""
    meta, texts = rows.meta, {}
    for name, (loaded, by_key) in rows.targets.items():
        nested, named = _written(meta, plan, name, permissions), name in meta.instance_name
        if nested is None and not named:
            continue
        target = reference_of(meta, name).target
        found = [(key, values) for key, values in by_key.items() if values is not None]
        inner = texts_of(loaded, nested, permissions, return_nulls) if found else None
        if nested is not None:
            write = row_writer(target, loaded, nested, permissions, return_nulls) if found else None
            texts[name] = {key: write(values, inner) for key, values in found}
        if named:
            name_of = raw_namer(target, permissions, positions(loaded)) if found else None
            texts[(NAMES, name)] = {key: name_of(values, inner) for key, values in found}
    for name, (loaded, groups) in rows.children.items():
        nested = _written(meta, plan, name, permissions)
        if nested is None:
            continue
        target = meta.properties[name].target
        inner = texts_of(loaded, nested, permissions, return_nulls) if groups else None
        write = row_writer(target, loaded, nested, permissions, return_nulls) if groups else None
        texts[name] = {key: f"[{','.join([write(values, inner) for values in kids])}]"
                       for key, kids in groups.items()}
    return texts


def _written(meta, plan, name, permissions):
    """The plan ``name`` (``address.country`` inside an embedded value) is
    written along, or None when it is not written."""
    owner, dot, part = name.partition(".")
    nested = None if plan is None else plan.properties.get(owner)
    if dot and nested is not None:
        nested = nested.properties.get(part)
    if nested is None or not shows_reference(meta, reference_of(meta, name), permissions, name):
        return None
    return nested


def reference_of(meta, name):
    """The reference attribute of a column name (``address.country``: the embedded value's)."""
    owner, dot, part = name.partition(".")
    prop = meta.properties[owner]
    return prop.target.properties[part] if dot else prop


class RawView:
    """What a transient attribute's getter sees as ``self``, over a row of
    database values: the loaded values as attributes (each
    converted as the loader converts it, when read), the referenced rows and
    children as views too, and anything the plan did not load, or whose
    entity the caller may not read, from the stored entity (loaded at the
    first such access). Read-only."""

    __slots__ = ("_rows", "_values", "_stored")
    _view_meta = None

    def __getattr__(self, name):        # not loaded
        return getattr(self._entity(), name)

    def _entity(self):
        if self._stored is None:
            meta = self._view_meta
            self._stored = meta.model.get_by_id(row_id(meta)(self._values))
        return self._stored


def _seen(view, rows, values):
    """A view (of the class ``view``) of one of ``rows``: made without
    ``__init__``, which costs three times as much."""
    seen = _new(view)
    seen._rows, seen._values, seen._stored = rows, values, None
    return seen


_new = object.__new__


def _view_of(rows):
    """The view class of ``rows`` (flatrows.RawRows), kept on them."""
    view = rows.view
    if view is None:
        view = rows.view = view_class(rows.meta, rows.names)
    return view


def view_class(meta, names):
    """The view class of rows of ``meta`` with the loaded columns ``names``."""
    return owned(_VIEWS, meta, tuple(names), lambda: _view_class(meta, names))


def _view_class(meta, names):
    namespace, embedded = {"__slots__": (), "_view_meta": meta}, {}
    for position, name in enumerate(names):
        owner, dot, part = name.partition(".")
        prop = meta.properties.get(owner)
        if prop is None or prop.getter is not None:
            continue
        if dot:
            field = prop.target.properties[part].field
            embedded.setdefault(owner, []).append((part, position, converter(field)))
        elif prop.link is not None:
            namespace[name] = property(_members(name, position))
        elif prop.is_reference:
            namespace[name] = property(_reference(name, position))
        else:
            namespace[name] = property(_value(position, converter(prop.field)))
    for name, parts in embedded.items():
        namespace[name] = property(_embedded(parts))
    for name, prop in meta.properties.items():
        if prop.getter is not None:
            namespace[name] = property(lambda self, name=name: getattr(self._entity(), name))
        elif prop.is_collection and prop.back_field is not None:
            namespace[name] = property(_composition(name))
    return type(f"{meta.name}RawView", (RawView,), namespace)


def _value(position, convert):
    if convert is None:
        return lambda self: self._values[position]

    def get(self):
        value = self._values[position]
        return value if value is None else convert(value)
    return get


def _embedded(parts):
    """The embedded value as the loader folds it: a dict, None when all its parts are."""
    def get(self):
        values = self._values
        value = {part: values[position] if values[position] is None or convert is None
                 else convert(values[position]) for part, position, convert in parts}
        return value if any(item is not None for item in value.values()) else None
    return get


def _reference(name, position):

    def get(self):
        loaded = self._rows.targets.get(name)
        if loaded is None:          # not loaded: its entity is not readable
            return getattr(self._entity(), name)
        key = self._values[position]
        found = None if key is None else loaded[1].get(key)
        return None if found is None else _seen(_view_of(loaded[0]), loaded[0], found)
    return get


def _members(name, position):

    def get(self):
        if name not in self._rows.members:          # its entity is not readable
            return getattr(self._entity(), name)
        loaded = self._rows.shown_members(name)
        shown = loaded[0][self._values[position]]
        if not shown:
            return []
        view = _view_of(loaded[1])
        return [_seen(view, loaded[1], values) for values in shown]
    return get


def _composition(name):

    def get(self):
        loaded = self._rows.children.get(name)
        if loaded is None:          # not in the plan, or its entity is not readable
            return getattr(self._entity(), name)
        kids = loaded[1].get(self._values[0])
        if not kids:
            return []
        view = _view_of(loaded[0])
        return [_seen(view, loaded[0], values) for values in kids]
    return get
