"""Entity rows -> JSON following a fetch plan and the caller's attribute permissions.

Key order is ``_entityName``, ``_instanceName``, ``id``, then the plan's
attributes. Hidden attributes never appear, nor does an instance name built
from one. Nulls are omitted unless ``return_nulls``.

Answers are written as JSON text directly (``write_entity``, ``write_entities``):
building dicts and then encoding them cost twice as much. ``serialize`` gives
the same entity as a dict, for application code that adds it to JSON of its own.
"""
from typing import Any

from ..jsonio import RawJson, loads, quoted, raw_array, value_text
from .datatypes import DATATYPES


def _instance_name_parts(meta, permissions):
    """The instance-name attributes, or None when one of them is hidden."""
    levels = permissions.attribute_levels(meta.name)
    if not all(levels.get(name) for name in meta.instance_name):
        return None
    return [meta.properties[name] for name in meta.instance_name]


def instance_namer(meta, permissions, named_references=False):
    """row -> instance name, worked out once per entity and permissions (kept
    with the permissions, which live as long as their role combination).
    ``named_references``: the row holds a referenced row's instance name
    where it would hold the row (rows written from the database's values,
    data/answer/rowwriters.py)."""
    namers = permissions.memo.setdefault(
        "instance_namers_named" if named_references else "instance_namers", {})
    namer = namers.get(meta.name)
    if namer is None:
        namer = namers[meta.name] = _build_namer(meta, permissions, named_references)
    return namer


def _build_namer(meta, permissions, named_references):
    if not meta.instance_name:
        prefix = f"{meta.name}-"
        return lambda row: prefix + str(row["id"])
    parts = _instance_name_parts(meta, permissions)
    if parts is None:
        return lambda row: None
    getters = [(prop.name, (_named if named_references else
                            _reference_namer(prop.target, permissions)) if prop.is_reference
                else prop.json_value) for prop in parts]
    if len(getters) == 1:
        (name, convert), = getters

        def single(row):
            value = row.get(name)
            if value is not None:
                value = convert(value)
            return None if value is None else str(value)
        return single

    def joined(row):
        texts = []
        for name, convert in getters:
            value = row.get(name)
            if value is not None:
                value = convert(value)
                if value is not None:
                    texts.append(str(value))
        return " ".join(texts) if texts else None
    return joined


def _named(name):
    return name


def _reference_namer(target, permissions):
    """The referenced row's instance name, its namer looked up at the first
    call (instance names may refer to each other)."""
    found = []

    def name_of(row):
        if not found:
            found.append(instance_namer(target, permissions))
        return found[0](row)
    return name_of


_AS_IS = DATATYPES["string"].to_json       # the identity: the value is its JSON


def _text_writer(prop):
    """value -> the property's JSON text. A stored attribute whose JSON form is
    a string (text, ids, dates, enums) is quoted without asking its type;
    the names of enum constants are quoted once."""
    convert = prop.json_value
    if prop.field is not None and prop.meta_enum is not None:
        return {member: quoted(member.name) for member in prop.meta_enum.enum_class}.__getitem__
    strings = prop.field is not None and (
        prop.datatype is not None and prop.datatype.json_schema.get("type") == "string")
    if convert is None or convert is _AS_IS:
        return quoted if strings else value_text
    if strings:
        return lambda value: quoted(convert(value))
    return lambda value: value_text(convert(value))


def _plan_memo(plan, kind, permissions, variant, build):
    """What ``build()`` works out for one plan and one set of permissions (and
    ``variant``), kept on the plan. The entry holds the permissions, so their
    id cannot be reused for other permissions while it exists."""
    cache = plan.__dict__.setdefault(kind, {})
    entry = cache.get((id(permissions), variant))
    if entry is None or entry[0] is not permissions:
        entry = cache[(id(permissions), variant)] = (permissions, build())
    return entry[1]


def _compiled(meta, plan, permissions, return_nulls, owner=None):
    """What to write for one plan, one set of permissions and one choice of
    nulls, worked out once (nested plans too): the object's opening text, the
    instance-name function and the visible attributes as (name, key text,
    value -> JSON text, or for references None and (nested compiled, is
    collection)). ``owner``: for an embedded value, (owning entity's name,
    attribute name), whose permissions on ``address.city`` decide."""
    return _plan_memo(plan, "_compiled", permissions, (return_nulls, owner),
                      lambda: _compile(meta, plan, permissions, return_nulls, owner))


def _compile(meta, plan, permissions, return_nulls, owner=None):
    # An embedded value has no entity name, instance name or id; its
    # attributes are shown as the owner's permissions on them say.
    if meta.is_embedded:
        levels = permissions.attribute_levels(owner[0])
        levels = {part: levels.get(f"{owner[1]}.{part}") for part in meta.properties}
    else:
        levels = permissions.attribute_levels(meta.name)
    writers = []
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        if name == "id" or not levels.get(name):
            continue
        if nested is None:
            writers.append((name, _text_writer(prop), None))
        else:
            inner = (meta.name, name) if prop.is_embedded else None
            kind = "embedded" if prop.is_embedded else "many" if prop.is_collection else "one"
            writers.append((name, None, (
                _compiled(prop.target, nested, permissions, return_nulls, inner), kind)))
    namer = None if meta.is_embedded else instance_namer(meta, permissions)
    return _generate(meta, namer, writers, return_nulls)


class Generated:
    """The source of one ``write`` function generated at run time (the plans'
    writers here, the flat pages' row writers in ``data/read/flatrows.py``): every
    value its text uses is passed in as a named constant, never written into
    the text."""

    def __init__(self, **names):
        self.constants = dict(names)

    def const(self, value):
        """The name ``value`` has in the source."""
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name

    def function(self, parameters, lines, label):
        namespace = dict(self.constants)
        text = f"def write({parameters}):\n" + "\n".join(lines) + "\n"
        exec(compile(text, label, "exec"), namespace)  # noqa: S102
        return namespace["write"]


def _generate(meta, namer, writers, return_nulls):
    """The writer of one compiled plan, ``write(row, written) -> JSON text``:
    Python source generated once, one statement per visible attribute (no
    loop over attributes, no per-attribute look-ups of how to write it).

    ``written``: the text of referenced rows already written in this answer
    (the loader gives every order of one customer the same row, every product
    of one tag the same member row: it is written once), keyed by (plan, row)
    for to-one references, by row in a dict per plan for collection members,
    and by list for whole collections.

    An embedded value's writer gives None when none of the attributes the
    caller sees is set: the value is then null, as when all of them are
    (``{}`` would tell that a hidden attribute is set)."""
    source, lines = Generated(quoted=quoted, ABSENT=_ABSENT), []
    const = source.const
    embedded = namer is None
    if embedded:       # an embedded value: its attributes, then "{" + ... + "}"
        lines.append("    out = ''")
        if return_nulls:
            lines.append("    p = False")     # whether an attribute is set
    else:
        head = f'{{"_entityName":{quoted(meta.name)}'
        named, unnamed = head + ',"_instanceName":', head + (
            ',"_instanceName":null,"id":' if return_nulls else ',"id":')
        lines += ["    i = quoted(str(row['id']))",
                  f"    x = {const(namer)}(row)",
                  "    if x is not None:",
                  f"        out = {const(named)} + quoted(x) + {const(_ID_KEY)} + i",
                  "    else:",
                  f"        out = {const(unnamed)} + i"]
    lines.append("    g = row.get")
    for name, write, nested in writers:
        key = f",{quoted(name)}:"
        lines.append(f"    x = g({const(name)}, ABSENT)")
        if return_nulls:
            lines += ["    if x is None:", f"        out += {const(key + 'null')}",
                      "    elif x is not ABSENT:"]
        else:
            lines.append("    if x is not None and x is not ABSENT:")
        if embedded and return_nulls:
            lines.append("        p = True")
        if nested is None:
            lines.append(f"        out += {const(key)} + {const(write)}(x)")
        elif nested[1] == "many":       # the list and each member written once
            lines.append(f"        out += {const(key)} + {const(_collection_writer(nested[0]))}"
                         "(x, written)")
        elif nested[1] == "embedded":   # a row's own value: nothing to share
            lines += [f"        t = {const(nested[0])}(x, written)",
                      "        if t is not None:",
                      f"            out += {const(key)} + t"]
            if return_nulls:
                lines += ["        else:", f"            out += {const(key + 'null')}"]
        else:               # a to-one reference, written once per row
            lines += [f"        k = ({const(nested)}, id(x))",
                      "        t = written.get(k)",
                      "        if t is None:",
                      f"            t = written[k] = {const(nested[0])}(x, written)",
                      f"        out += {const(key)} + t"]
    if embedded:
        lines.append(f"    return '{{' + out[1:] + '}}' if {'p' if return_nulls else 'out'} else None")
    else:
        lines.append("    return out + '}'")
    return source.function("row, written", lines, f"<writer {meta.name}>")


def _collection_writer(write):
    """(list of rows, written) -> the JSON array, each list and each member row
    written once per answer: owners with the same many-to-many members share
    one list, and a member of several owners is one row."""
    def write_list(rows, written):
        text = written.get(id(rows))      # a list belongs to one attribute of one plan
        if text is None:
            done = written.get(id(write))       # this plan's members written so far
            if done is None:
                done = written[id(write)] = {}
            texts = []
            for child in rows:
                text = done.get(id(child))
                if text is None:
                    text = done[id(child)] = write(child, written)
                texts.append(text)
            text = written[id(rows)] = f"[{','.join(texts)}]"
        return text
    return write_list


def _compiled_for(meta, plan, permissions, return_nulls):
    if plan is not None:
        return _compiled(meta, plan, permissions, return_nulls)
    key = ("names_only", return_nulls)
    compiled = permissions.memo.setdefault(key, {}).get(meta.name)
    if compiled is None:
        compiled = permissions.memo[key][meta.name] = _generate(
            meta, instance_namer(meta, permissions), (), return_nulls)
    return compiled


def write_entity(meta: Any, row: Any, plan: Any, permissions: Any,
                 return_nulls: bool = False) -> RawJson:
    """One entity as JSON text (plan None: ``_entityName``, ``_instanceName`` and ``id``)."""
    return RawJson(_compiled_for(meta, plan, permissions, return_nulls)(row, {}))


def write_entities(meta: Any, rows: Any, plan: Any, permissions: Any,
                   return_nulls: bool = False) -> RawJson:
    """A JSON array of entities."""
    write = _compiled_for(meta, plan, permissions, return_nulls)
    written: dict[Any, Any] = {}
    return raw_array([write(row, written) for row in rows])


def serialize(meta, row, plan, permissions, return_nulls=False):
    """One entity as a dict (decimals as Decimal), for JSON of the caller's own."""
    return loads(_compiled_for(meta, plan, permissions, return_nulls)(row, {}))


_ABSENT = object()
_ID_KEY = ',"id":'


def _references(meta, plan, permissions):
    """The plan's visible references for ``count_objects``, nested likewise:
    (name, is collection, inner references, whether those are all leaves)."""
    return _plan_memo(plan, "_references", permissions, None,
                      lambda: _find_references(meta, plan, permissions))


def _find_references(meta, plan, permissions):
    found = []
    levels = permissions.attribute_levels(meta.name)
    for name, nested in plan.properties.items():
        prop = meta.properties[name]
        # An embedded value is part of its entity, not an entity of the answer
        # (the references in it are counted as the loader reads them).
        if nested is not None and levels.get(name) and not prop.is_embedded:
            inner = _references(prop.target, nested, permissions)
            found.append((name, prop.is_collection, inner, all(not ref[2] for ref in inner)))
    return found


def count_objects(meta: Any, rows: Any, plan: Any, permissions: Any, limit: int) -> int:
    """How many JSON objects serializing ``rows`` along ``plan`` writes, found
    without writing them, or a number above ``limit`` as soon as it is one.
    A loaded row that several parents share (the order of each of its lines)
    is written once per parent, so an answer can grow as N^depth while the
    loaded rows grow linearly; rows with deeper references are counted once
    per plan and remembered."""
    refs = _references(meta, plan, permissions) if plan is not None else ()
    if not refs:
        return len(rows)
    memo: dict[Any, Any] = {}
    total = 0
    for row in rows:
        total += _count(row, refs, memo, limit)
        if total > limit:
            break
    return total


def _count(row, refs, memo, limit):
    total = 1
    for name, is_collection, inner, leafy in refs:
        value = row.get(name)
        if value is None:
            continue
        children = value if is_collection else (value,)
        if not inner:
            total += len(children)
        elif leafy:
            total += sum(_count_leafy(child, inner) for child in children)
        else:
            for child in children:
                key = (id(child), id(inner))
                found = memo.get(key)
                if found is None:
                    found = memo[key] = _count(child, inner, memo, limit)
                total += found
                if total > limit:
                    return total
    return total


def _count_leafy(row, refs):
    """One row and its references, none of which has references of its own."""
    total = 1
    for name, is_collection, _, _ in refs:
        value = row.get(name)
        if value is not None:
            total += len(value) if is_collection else 1
    return total
