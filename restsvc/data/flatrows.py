"""Pages of a flat plan written straight from the database's rows.

A plan is flat when every attribute it loads is a column of the entity's own
table or of an embedded value: no references, collections or transient
attributes, nothing the model presents after loading. Such a page needs no
Python objects between the cursor and the answer: each column's database
value is written as JSON text by one function worked out once per column
(32 hex digits -> the UUID's text, a stored enum id -> its quoted name, the
ISO text SQLite stores for a date or date-time -> the answer's form:
rawvalues.py), and a row -> JSON writer is compiled once per entity, plan
shape, permissions and ``returnNulls``. The bytes are the same as ``serialize.write_entities`` writes
from converted rows; permissions decide the same way (hidden attributes and
instance names built from them are left out), and the row-level roles and
soft-delete rules were applied by the query as for every other load.
"""
from collections import Counter
from itertools import repeat
from operator import itemgetter

from ..jsonio import RawJson, quoted, raw_array
from ..model.serialize import Generated, instance_namer
from .columns import converter, row_id as _row_id     # byid.py's name for it
from .members import member_lists
from .rawvalues import NEVER_NONE, id_writer, plain_text, raw_writer


class RawRows(list):
    """The database's value tuples of a flat plan, in the loader's column order.
    ``links``: the plan's many-to-many attributes, each the position of its
    link text; ``members``: what ``fill_flat_members`` loaded for them."""

    def __init__(self, values, meta, loading, names, converting):
        super().__init__(values)
        self.meta, self.loading = meta, loading
        self.names, self._converting = names, converting
        self.links = _links(meta, loading, names)
        self.members = {}


class KeyRows:
    """What ``cursors.sort_key`` reads of a page: its last row, the rows from
    the end; of a row only the columns asked for are converted."""

    def __init__(self, raw):
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
    found = raw.loading.__dict__.get("_flat_key_columns")
    if found is None:
        convert = dict(raw._converting)
        found = raw.loading._flat_key_columns = {
            name: (position, convert.get(position)) for position, name in enumerate(raw.names)}
    return found


def is_flat(meta, loading):
    """Whether ``loading`` (a loading plan) is flat (see the module docstring); kept on it."""
    flat = loading.__dict__.get("_flat")
    if flat is None:
        flat = loading._flat = (getattr(meta.model, "present_rows", None) is None
                                and all(_flat_property(meta, name, nested)
                                        for name, nested in loading.properties.items()))
    return flat


def _flat_property(meta, name, nested):
    prop = meta.properties[name]
    if prop.link is not None:       # many-to-many: members of a flat plan, written flat too
        return nested is not None and is_flat(prop.target, nested)
    if prop.getter is not None or prop.is_collection or prop.is_reference:
        return False
    if prop.is_embedded:
        return nested is not None and all(
            part_nested is None and _column(prop.target.properties[part])
            for part, part_nested in nested.properties.items())
    return nested is None and _column(prop)


def _column(prop):
    return (prop.field is not None and prop.persistent and not prop.is_collection
            and not prop.is_reference and prop.getter is None)


def _links(meta, loading, names):
    """(name, position of the link text) of the plan's many-to-many attributes."""
    links = loading.__dict__.get("_flat_links")
    if links is None:
        links = loading._flat_links = [(name, names.index(name)) for name in loading.properties
                                       if meta.properties[name].link is not None]
    return links


def fill_flat_members(access, rows, budget, load):
    """The members of each many-to-many attribute of a flat page the caller
    may see (its attribute visible, its entity readable), loaded as a flat
    page too by ``load`` (the loader's select by id, raw): ``rows.members``."""
    meta = rows.meta
    for name, position in rows.links:
        prop = meta.properties[name]
        if not _shows_members(meta, prop, access.permissions):
            continue
        counts = Counter(map(itemgetter(position), rows))
        rows.members[name] = member_lists(access, prop, rows.loading.properties[name], counts,
                                          budget, load, _row_id(prop.target))


def _shows_members(meta, prop, permissions):
    """Whether the caller sees a many-to-many attribute's members at all: the
    attribute visible and its entity readable (else it is not written)."""
    return bool(permissions.attribute_levels(meta.name).get(prop.name)) \
        and permissions.can(prop.target.name, "read")


def write_flat(meta, rows, plan, permissions, return_nulls=False):
    """A JSON array of the entities of ``rows`` (RawRows) along ``plan``."""
    write = _writer(meta, rows, plan, permissions, return_nulls)
    if not rows.members:
        return raw_array(map(write, rows))
    return raw_array(map(write, rows, repeat(_member_texts(rows, plan, permissions, return_nulls))))


def write_flat_entity(meta, rows, plan, permissions, return_nulls=False):
    """The first entity of ``rows`` (RawRows) along ``plan``, as JSON text."""
    write = _writer(meta, rows, plan, permissions, return_nulls)
    if not rows.members:
        return RawJson(write(rows[0]))
    return RawJson(write(rows[0], _member_texts(rows, plan, permissions, return_nulls)))


def _member_texts(rows, plan, permissions, return_nulls):
    """Per many-to-many attribute shown: link text -> the JSON array of its
    members. Each member and each distinct set of members is written once."""
    texts = {}
    for name, (lists, members) in rows.members.items():
        written = {}
        if members:
            target, nested = rows.meta.properties[name].target, plan.properties[name]
            write = _writer(target, members, nested, permissions, return_nulls)
            inner = _member_texts(members, nested, permissions, return_nulls) \
                if members.members else None
            written = {id(values): write(values) if inner is None else write(values, inner)
                       for values in members}
        texts[name] = {text: f"[{','.join([written[id(values)] for values in shown])}]"
                       for text, shown in lists.items()}
    return texts


def tag_row(rows):
    """What ``etags.entity_tag`` reads of the first row of ``rows``: id and
    version, converted as the loader converts them."""
    values, version = rows[0], _key_columns(rows).get("version")
    return {"id": _row_id(rows.meta)(values),
            "version": None if version is None else values[version[0]]}


def _writer(meta, rows, plan, permissions, return_nulls):
    """The row writer, compiled once per entity, plan shape, permissions and
    ``returnNulls``: an inline plan (a new object per request) of a shape seen
    before finds it too. An entry holds its entity and permissions, so their
    ids cannot be reused by others while it exists."""
    key = (id(meta), id(permissions), return_nulls, flat_shape(plan), tuple(rows.names))
    entry = _WRITERS.get(key)
    if entry is None or entry[0] is not meta or entry[1] is not permissions:
        if len(_WRITERS) >= _WRITERS_MAX:
            _WRITERS.clear()
        entry = _WRITERS[key] = (meta, permissions,
                                 _compile(meta, plan, rows, permissions, return_nulls))
    return entry[2]


def flat_shape(plan):
    """What of a flat plan decides its rows and writer, kept on the plan: an
    inline plan (a new object per request) of a shape seen before shares them."""
    shape = plan.__dict__.get("_flat_shape")
    if shape is None:
        shape = plan._flat_shape = tuple(
            (name, None if nested is None else tuple(nested.properties))
            for name, nested in plan.properties.items())
    return shape


_WRITERS: dict[tuple, tuple] = {}
_WRITERS_MAX = 1024


def _compile(meta, plan, rows, permissions, return_nulls):
    """The row writer: Python source generated for this plan and permissions and
    compiled once, one statement per attribute (no loop over attributes, no
    per-row lookups); key texts and writers are its constants (``Generated``)."""
    index = {name: position for position, name in enumerate(rows.names)}
    levels = permissions.attribute_levels(meta.name)
    source, lines = Generated(), []
    const = source.const

    def attribute(target, key, position, prop):
        """One attribute appended to ``target``; inside an embedded value with
        ``returnNulls``, ``p`` says whether one of its attributes is not null."""
        write, flag = raw_writer(prop), return_nulls and target == "e"
        lines.append(f"    x = v[{position}]")
        lines.append("    if x is not None:")
        if write in NEVER_NONE:
            lines.append(f"        {target} += {const(key)} + {const(write)}(x)")
            if flag:
                lines.append("        p = True")
        else:
            lines.append(f"        t = {const(write)}(x)")
            lines.append("        if t is not None:")
            lines.append(f"            {target} += {const(key)} + t")
            if flag:
                lines.append("            p = True")
            if return_nulls:
                lines.append(f"        else:\n            {target} += {const(key + 'null')}")
        if return_nulls:
            lines.append(f"    else:\n        {target} += {const(key + 'null')}")

    head = f'{{"_entityName":{quoted(meta.name)}'
    no_name = head + (',"_instanceName":null,"id":' if return_nulls else ',"id":')
    named, write_id = head + ',"_instanceName":', id_writer(meta.properties["id"])
    plain = _plain_name(meta, permissions, index)
    if plain is not None:
        lines.append(f"    x = v[{plain}]")
        lines.append(f"    out = ({const(no_name)} if x is None else "
                     f"{const(named)} + {const(quoted)}(x) + ',\"id\":') + {const(write_id)}(v[0])")
    else:
        lines.append(f"    x = {const(_raw_namer(meta, permissions, index))}(v)")
        lines.append(f"    out = ({const(no_name)} if x is None else "
                     f"{const(named)} + x + ',\"id\":') + {const(write_id)}(v[0])")
    for name, nested in plan.properties.items():
        if name == "id" or not levels.get(name):
            continue
        prop, key = meta.properties[name], f",{quoted(name)}:"
        if prop.link is not None:       # the members' array, written once per link text
            if _shows_members(meta, prop, permissions):
                lines.append(f"    out += {const(key)} + m[{const(name)}][v[{index[name]}]]")
            continue
        if nested is None:
            attribute("out", key, index[name], prop)
            continue
        lines.append("    e = ''")        # an embedded value: null when all its parts are
        if return_nulls:
            lines.append("    p = False")
        for part in nested.properties:
            if not levels.get(f"{name}.{part}"):      # address.city: the owner's permission
                continue
            attribute("e", f",{quoted(part)}:", index[f"{name}.{part}"],
                      prop.target.properties[part])
        lines.append(f"    if {'p' if return_nulls else 'e'}:\n"
                     f"        out += {const(key + '{')} + e[1:] + '}}'")
        if return_nulls:
            lines.append(f"    else:\n        out += {const(key + 'null')}")
    lines.append("    return out + '}'")
    return source.function("v, m=None", lines, f"<row writer {meta.name}>")


def _plain_name(meta, permissions, index):
    """The column of the instance name when it is one visible text attribute, else None."""
    if len(meta.instance_name) != 1:
        return None
    name, = meta.instance_name
    prop = meta.properties[name]
    if converter(prop.field) is not None or not plain_text(prop) \
            or instance_namer(meta, permissions)({name: "x"}) != "x":
        return None
    return index[name]


def _raw_namer(meta, permissions, index):
    """values -> the instance name as JSON text, or None (none, or a part is hidden)."""
    namer = instance_namer(meta, permissions)
    if not meta.instance_name:
        read_id = _row_id(meta)
        return lambda values: quoted(namer({"id": read_id(values)}))
    parts = [(name, index[name], converter(meta.properties[name].field))
             for name in meta.instance_name]

    def name_of(values):
        row = {}
        for name, position, convert in parts:
            value = values[position]
            row[name] = value if value is None or convert is None else convert(value)
        text = namer(row)
        return None if text is None else quoted(text)
    return name_of
