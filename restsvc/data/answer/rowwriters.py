"""Row writers: one row of database values (``flatrows.RawRows``) -> entity JSON.

A writer is Python source generated for one entity, plan shape, caller's
permissions and ``returnNulls`` and compiled once, one statement per visible
attribute (no loop over attributes, no per-row look-ups). It writes a
column's value with the column's raw writer (``rawvalues.py``) and splices
in what is written once per answer for many rows (``texts``, keyed by what
the row holds): a to-one reference's row by its foreign key, a composition's
array by the row's id, a many-to-many attribute's array by its link text.
A reference the caller does not see (its attribute hidden, its entity not
readable) is left out; a referenced row the caller cannot see is null, as
a missing one.
"""
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ...jsonio import quoted, value_text
from ..columns import converter
from ..memo import Memo, plan_facts
from .generated import Generated
from .names import NAMES, instance_namer, raw_namer
from .rawvalues import NEVER_NONE, CommonCase, common_case, id_writer, plain_text, raw_writer, value_writer

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass, MetaProperty
    from ...security.roles import Permissions

# (a row of database values, the texts spliced in) -> the entity's JSON text.
RowWriter = Callable[..., str]
# The shape of a plan's level: (attribute, its nested plan's attributes or None).
Shape = tuple[tuple[str, "tuple[str, ...] | None"], ...]
_WRITERS: "Memo[tuple[MetaClass, Permissions, RowWriter]]" = Memo("row writers", 1024)
# A ranked search's highlighted text of a hit (read/textsearch.py), written
# after the plan's attributes when the rows hold it.
SNIPPET = "_snippet"


class Columns(Protocol):
    """What a row writer is compiled for besides the plan (flatrows.RawRows)."""
    names: tuple[str, ...]          # the loaded columns
    transients: tuple[str, ...]     # the transient attributes' values after them


def shows_reference(meta: "MetaClass", prop: "MetaProperty", permissions: "Permissions",
                    name: str | None = None) -> bool:
    """Whether the caller sees what a reference attribute refers to: the
    attribute visible (``name``: inside an embedded value, ``address.country``)
    and its entity readable (else it is not written)."""
    return bool(permissions.attribute_levels(meta.name).get(name or prop.name)) \
        and permissions.can(prop.related.name, "read")


def row_writer(meta: "MetaClass", rows: Columns, plan: "FetchPlan | None",
               permissions: "Permissions", return_nulls: bool) -> RowWriter:
    """The row writer, compiled once per entity, plan shape (None: the
    instance name and id only), permissions and ``returnNulls``: an inline
    plan (a new object per request) of a shape seen before finds it too.
    An entry holds its entity and permissions, so their ids cannot be
    reused by others while it exists."""
    key = (id(meta), id(permissions), return_nulls,
           None if plan is None else flat_shape(plan), tuple(rows.names),
           rows.transients)
    entry = _WRITERS.get(key)
    if entry is None or entry[0] is not meta or entry[1] is not permissions:
        entry = _WRITERS.put(key, (meta, permissions,
                                   _compile(meta, plan, rows, permissions, return_nulls)))
    return entry[2]


def flat_shape(plan: "FetchPlan") -> Shape:
    """What of a plan decides one level's rows and writer, kept on the plan:
    an inline plan (a new object per request) of a shape seen before shares
    them. A reference's own plan is written by a writer of its own."""
    facts = plan_facts(plan)
    shape: Shape | None = facts.shape
    if shape is None:
        shape = facts.shape = tuple(
            (name, None if nested is None else tuple(nested.properties))
            for name, nested in plan.properties.items())
    return shape


def positions(rows: Columns) -> dict[str, int]:
    """Name -> position in a row of ``rows``: the loaded columns, then the
    transient attributes' values."""
    return {name: position for position, name in enumerate((*rows.names, *rows.transients))}


def _compile(meta: "MetaClass", plan: "FetchPlan | None", rows: Columns,
             permissions: "Permissions", return_nulls: bool) -> RowWriter:
    """The row writer ``write(v, texts)``; key texts and writers are constants
    of its source (``Generated``). The entity's text is one f-string of its
    pieces, one expression per attribute: made at once, where appending each
    to a growing text copied that text again (and again)."""
    index = positions(rows)
    levels = permissions.attribute_levels(meta.name)
    source, lines = Generated(), []
    pieces: list[str] = []      # one expression per attribute: its text, or ''
    const = source.const

    def null(key: str) -> str:
        """What an attribute without a value writes."""
        return const(key + "null") if return_nulls else "''"

    def inline(write: Callable[[Any], "str | None"]) -> CommonCase | None:
        """``write``'s common case (``rawvalues.common_case``), its names bound
        in the source, to be written inline; None if it has none."""
        common = common_case(write)
        if common is not None:
            source.constants.update(common.names)
        return common

    def value(write: Callable[[Any], "str | None"]) -> str:
        """The source of the text of the value ``x`` (not None), or None when
        ``write`` gives None; its common case inline."""
        call = f"(str(x) if x.__class__ is int else {const(write)}(x))" if write is value_text \
            else f"{const(write)}(x)"     # value_text: most often an integer, without a look-up
        common = inline(write)
        if common is None:
            return call
        return f"({common.text} if {common.test} else {call})"

    def text(key: str, write: Callable[[Any], "str | None"]) -> str:
        """The source of ``key`` and the text of the value ``x`` (not None),
        or ``null(key)`` when ``write`` gives None."""
        if write is value_text or write in NEVER_NONE:
            return f"{const(key)} + {value(write)}"
        common = inline(write)
        written = f"({null(key)} if (t := {const(write)}(x)) is None else {const(key)} + t)"
        if common is None:
            return written
        return f"({const(key)} + {common.text} if {common.test} else {written})"

    def attribute(key: str, position: int, write: Callable[[Any], "str | None"]) -> str:
        """The source of an attribute's piece of the text."""
        if write is quoted and f"v[{position}]" == name_source:      # the name, read once
            return f"({null(key)} if n is None else {const(key)} + n)"
        return f"({null(key)} if (x := v[{position}]) is None else {text(key, write)})"

    def reference(key: str, column: str) -> str:
        """A to-one reference's text spliced in by its foreign key (in ``column``)."""
        return (f"({null(key)} if (t := m[{const(column)}].get(v[{index[column]}])) is None "
                f"else {const(key)} + t)")

    def embedded(name: str, nested: "FetchPlan", prop: "MetaProperty") -> str:
        """An embedded value's piece, made first by statements into a text of
        its own (``e<n>``): null when all its parts are (``p<n>``: whether one
        is not, with ``returnNulls``)."""
        held, flag = f"e{len(pieces)}", f"p{len(pieces)}"
        lines.append(f"    {held} = ''")
        if return_nulls:
            lines.append(f"    {flag} = False")
        for part in nested.properties:
            column, part_prop, key = f"{name}.{part}", prop.related.properties[part], \
                f",{quoted(part)}:"
            if not levels.get(column):      # address.city: the owner's permission
                continue
            if part_prop.is_reference:      # address.country: its row, by the foreign key
                if not shows_reference(meta, part_prop, permissions, column):
                    continue
                lines.append(f"    t = m[{const(column)}].get(v[{index[column]}])")
            else:
                lines.append(f"    x = v[{index[column]}]\n"
                             f"    t = None if x is None else {value(raw_writer(part_prop))}")
            lines.append(f"    if t is not None:\n        {held} += {const(key)} + t")
            if return_nulls:
                lines.append(f"        {flag} = True\n    else:\n        {held} += {null(key)}")
        key = f",{quoted(name)}:"
        return (f"({const(key + '{')} + {held}[1:] + '}}' if {flag if return_nulls else held} "
                f"else {null(key)})")

    named, no_name = _heads(meta, return_nulls)
    write_id = id_writer(meta.properties["id"])
    common = inline(write_id)
    lines.append("    x = v[0]")
    lines.append(f"    i = {const(write_id)}(x)" if common is None else
                 f"    i = {common.text} if {common.test} else {const(write_id)}(x)")
    name_source = _name_expression(meta, permissions, index, const)
    lines.append(f"    n = {name_source}")     # the instance name's text, written once
    lines.append(f"    n = n if n is None else {const(quoted)}(n)")
    lines.append(f"    out = ({const(no_name)} if n is None else {const(named)} + n + ',\"id\":') + i")
    for name, nested in plan.properties.items() if plan is not None else ():
        if name == "id" or not levels.get(name):
            continue
        prop, key = meta.properties[name], f",{quoted(name)}:"
        if prop.is_reference:
            if not shows_reference(meta, prop, permissions):
                continue
            if prop.link is not None:       # the members' array, written once per link text
                pieces.append(f"{const(key)} + m[{const(name)}][v[{index[name]}]]")
            elif prop.is_collection:        # the composition's array, by the row's id
                pieces.append(f"{const(key)} + m[{const(name)}].get(v[0], '[]')")
            else:                           # the referenced row, by the foreign key
                pieces.append(reference(key, name))
        elif prop.getter is not None:       # worked out while loading, a Python value
            pieces.append(attribute(key, index[name], value_writer(prop)))
        elif nested is None:
            pieces.append(attribute(key, index[name], raw_writer(prop)))
        else:
            pieces.append(embedded(name, nested, prop))
    if SNIPPET in index:
        pieces.append(attribute(f",{quoted(SNIPPET)}:", index[SNIPPET], quoted))
    # In parentheses, no ':' or '!' is read as a format's; and what an
    # f-string's expression may not hold before Python 3.12:
    assert not any("\\" in piece or '"""' in piece for piece in pieces)
    lines.append('    return f"""{out}' + "".join(f"{{({piece})}}" for piece in pieces) + '}}"""')
    return source.function("v, m=None", lines, f"<row writer {meta.name}>")


def _heads(meta: "MetaClass", return_nulls: bool) -> tuple[str, str]:
    """The text of an entity before its instance name, and before its id
    when it has no instance name."""
    head = f'{{"_entityName":{quoted(meta.name)}'
    return head + ',"_instanceName":', head + (
        ',"_instanceName":null,"id":' if return_nulls else ',"id":')


def names_only(meta: "MetaClass", permissions: "Permissions",
               return_nulls: bool) -> Callable[[Mapping[str, Any]], str]:
    """A row of Python values by name (its id and instance-name attributes)
    -> the entity's text along no plan: ``_entityName``, ``_instanceName``
    and ``id`` (a create's answer from the values it wrote)."""
    namer, (named, no_name) = instance_namer(meta, permissions), _heads(meta, return_nulls)

    def write(row: Mapping[str, Any]) -> str:
        name, key = namer(row), quoted(str(row["id"]))
        return f"{no_name}{key}}}" if name is None else f'{named}{quoted(name)},"id":{key}}}'
    return write


def _name_expression(meta: "MetaClass", permissions: "Permissions", index: Mapping[str, int],
                     const: Callable[[object], str]) -> str:
    """The source of the row's instance name (a Python text, or None): a
    visible text column as it is stored, a visible reference's as its row
    has it, else worked out by ``raw_namer``."""
    if len(meta.instance_name) == 1:
        name, = meta.instance_name
        prop = meta.properties[name]
        shown = name in index and instance_namer(meta, permissions, True)({name: "x"}) == "x"
        if shown and prop.field is not None and converter(prop.field) is None \
                and plain_text(prop):
            return f"v[{index[name]}]"
        if shown and prop.is_reference and permissions.can(prop.related.name, "read"):
            return f"m[{const((NAMES, name))}].get(v[{index[name]}])"
    return f"{const(raw_namer(meta, permissions, index))}(v, m)"
