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
from collections.abc import Callable, Collection, Mapping
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..columns import converter, row_id
from ..memo import plan_facts
from .request import By
from .rows import Children, Key, RawRows, Targets, Values
from .views import viewer
from ..answer.names import NAMES, raw_namer
from ..answer.rowwriters import positions, row_writer, shows_reference

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass, MetaProperty
    from ...security.roles import Permissions
    from ..access import Access
    from .request import Budget

PARENT = "\0parent"     # the owner's id on composition children while loading
Field = Any             # a peewee field (the model's column)
# The loader's select by id: (access, entity, plan, key column, keys, how) -> rows.
Load = Callable[["Access", "MetaClass", "FetchPlan", Field, Collection[Key], By], RawRows]
# What the row writers splice in: per attribute (or (NAMES, attribute)), key -> text.
Texts = dict[str | tuple[str, str], Mapping[Key, "str | None"]]
# The same for the rows of a level below (flatrows._texts).
TextsOf = Callable[[RawRows, "FetchPlan | None", "Permissions", bool], "Texts | None"]


def readable(meta: "MetaClass", prop: "MetaProperty", permissions: "Permissions") -> bool:
    """Whether the loader loads what a reference attribute refers to: its
    entity readable (the attribute may be hidden: a transient attribute may
    read it)."""
    return permissions.can(prop.related.name, "read")


def fill_nested(access: "Access", rows: RawRows, budget: "Budget | None", load: Load) -> None:
    """The to-one references and compositions of ``rows`` the caller may
    read, loaded by ``load`` (the loader's select by id), then the rows'
    transient attributes. Their many-to-many members are the loader's
    (``flatrows.fill_flat_members``, shown or not)."""
    meta, permissions = rows.meta, access.permissions
    for name, nested in rows.loading.properties.items():
        prop = meta.properties[name]
        if nested is None or not prop.is_reference or prop.link is not None \
                or not readable(meta, prop, permissions):
            continue            # an entity the caller may not read: left out
        if prop.is_collection:
            rows.children[name] = _children(access, rows, prop, nested, (budget, load))
        else:
            rows.targets[name] = _targets(access, rows, prop, nested, (budget, load))
    for name, part, nested in embedded_references(meta, rows.loading):
        if readable(meta, part, permissions):
            rows.targets[name] = _targets(access, rows, part, nested, (budget, load), name)
    getters = [(name, getter) for name in rows.loading.properties
               for getter in (meta.properties[name].getter,) if getter is not None]
    if getters:
        view = viewer(rows)
        if len(getters) == 1:
            (_, get), = getters
            rows[:] = [values + (get(view(values)),) for values in rows]
        else:
            rows[:] = [values + tuple([get(seen) for _, get in getters])
                       for values in rows for seen in (view(values),)]
        rows.transients = tuple(name for name, _ in getters)


def embedded_references(meta: "MetaClass", plan: "FetchPlan"
                        ) -> list[tuple[str, "MetaProperty", "FetchPlan"]]:
    """(column name, part, the part's plan) of each to-one reference inside
    an embedded value of ``plan`` (``address.country``), worked out once per plan."""
    facts = plan_facts(plan)
    known: list[tuple[str, MetaProperty, FetchPlan]] | None = facts.embedded_references
    if known is not None:
        return known
    found = []
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        if nested is not None and prop.is_embedded:
            found += [(f"{name}.{part}", prop.related.properties[part], part_nested)
                      for part, part_nested in nested.properties.items()
                      if part_nested is not None]
    facts.embedded_references = found
    return found


def _targets(access: "Access", rows: RawRows, prop: "MetaProperty", nested: "FetchPlan",
             how: "tuple[Budget | None, Load]", column: str | None = None) -> Targets:
    """The referenced rows of one to-one reference (in the column ``column``,
    by default the attribute's) by foreign key, None where the caller cannot
    see it: the keys converted as the loader converts them, each distinct
    key once. ``how``: the answer's budget and the loader's select by id."""
    budget, load = how
    position, convert = rows.names.index(column or prop.name), converter(prop.field)
    keys = set(map(itemgetter(position), rows))
    keys.discard(None)
    ids = {key: key if convert is None else convert(key) for key in keys}
    wanted = set(ids.values())
    wanted.discard(None)
    target = prop.related
    model: Any = target.model       # a Peewee model: its fields are class attributes
    found = load(access, target, nested, model.id, wanted, By(budget=budget, with_deleted=True))
    # A row whose id is stored as the key is: its id converts as the key did.
    # Others (none, unless the keys are stored in other forms) by the converted ids.
    by_raw = {values[0]: values for values in found}
    by_id: dict[Key, Values] | None = None
    by_key: dict[Key, Values | None] = {}
    for key, converted in ids.items():
        values = by_raw.get(key)
        if values is None and converted is not None:
            if by_id is None:
                read_id = row_id(target)
                by_id = {read_id(row): row for row in found}
            values = by_id.get(converted)
        by_key[key] = values
    return Targets(found, by_key)


def _children(access: "Access", rows: RawRows, prop: "MetaProperty", nested: "FetchPlan",
              how: "tuple[Budget | None, Load]") -> Children:
    """The children's rows of one composition by the parent's id as loaded,
    in the loader's order."""
    budget, load = how
    ids = list(map(row_id(rows.meta), rows))
    back = prop.back_field
    found = load(access, prop.related, nested, back, set(ids),
                 By(parent_column=back, budget=budget))
    grouped: dict[Key, list[Values]] = {}
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
    return Children(found, {values[0]: grouped[key] for values, key in zip(rows, ids)
                            if key in grouped})


def nested_texts(rows: RawRows, plan: "FetchPlan | None", permissions: "Permissions",
                 return_nulls: bool, texts_of: TextsOf) -> Texts:
    """What the row writer of ``rows`` splices in (rowwriters.py) for its
    to-one references and compositions: per reference of ``plan`` written
    (its attribute visible, its entity readable), each referenced row's text
    by foreign key, or each parent's array of children by its id; per
    reference of the instance name, each referenced row's instance name by
    foreign key. ``plan`` None: only the names. ``texts_of``: the same for
    the rows of a level below, many-to-many members included (flatrows)."""
    meta, texts = rows.meta, Texts()
    for name, (loaded, by_key) in rows.targets.items():
        nested, named = _written(meta, plan, name, permissions), name in meta.instance_name
        if nested is None and not named:
            continue
        target = reference_of(meta, name).related
        found = [(key, values) for key, values in by_key.items() if values is not None]
        inner = texts_of(loaded, nested, permissions, return_nulls) if found else None
        if nested is not None:
            texts[name] = {} if not found else _written_rows(
                row_writer(target, loaded, nested, permissions, return_nulls), found, inner)
        if named:
            texts[(NAMES, name)] = {} if not found else _written_rows(
                raw_namer(target, permissions, positions(loaded)), found, inner)
    for name, (loaded, groups) in rows.children.items():
        nested = _written(meta, plan, name, permissions)
        if nested is None:
            continue
        target = meta.properties[name].related
        if not groups:
            texts[name] = {}
            continue
        inner = texts_of(loaded, nested, permissions, return_nulls)
        write = row_writer(target, loaded, nested, permissions, return_nulls)
        texts[name] = {key: f"[{','.join([write(values, inner) for values in kids])}]"
                       for key, kids in groups.items()}
    return texts


def _written_rows(write: Callable[..., "str | None"], found: list[tuple[Key, Values]],
                  inner: "Texts | None") -> dict[Key, "str | None"]:
    """Foreign key -> what ``write`` writes of the row it names."""
    return {key: write(values, inner) for key, values in found}


def _written(meta: "MetaClass", plan: "FetchPlan | None", name: str,
             permissions: "Permissions") -> "FetchPlan | None":
    """The plan ``name`` (``address.country`` inside an embedded value) is
    written along, or None when it is not written."""
    owner, dot, part = name.partition(".")
    nested = None if plan is None else plan.properties.get(owner)
    if dot and nested is not None:
        nested = nested.properties.get(part)
    if nested is None or not shows_reference(meta, reference_of(meta, name), permissions, name):
        return None
    return nested


def reference_of(meta: "MetaClass", name: str) -> "MetaProperty":
    """The reference attribute of a column name (``address.country``: the embedded value's)."""
    owner, dot, part = name.partition(".")
    prop = meta.properties[owner]
    return prop.related.properties[part] if dot else prop
