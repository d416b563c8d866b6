"""Entity rows -> JSON following a fetch plan and the caller's attribute permissions.

Key order is ``_entityName``, ``_instanceName``, ``id``, then the plan's
attributes. Hidden attributes never appear, nor does an instance name built
from one. Nulls are omitted unless ``return_nulls``.
"""
from .datatypes import DATATYPES


def _instance_name_parts(meta, permissions):
    """The instance-name attributes, or None when one of them is hidden."""
    levels = permissions.attribute_levels(meta.name)
    if not all(levels.get(name) for name in meta.instance_name):
        return None
    return [meta.properties[name] for name in meta.instance_name]


def instance_name(meta, row, permissions):
    """The instance name from the instance-name attributes, or None."""
    if not meta.instance_name:
        return f"{meta.name}-{row['id']}"
    parts = _instance_name_parts(meta, permissions)
    return None if parts is None else _join_name(parts, row, permissions)


def instance_namer(meta, permissions):
    """row -> instance name, for many rows of one entity (serializers, reports): the
    visible parts are worked out once."""
    if not meta.instance_name:
        return lambda row: f"{meta.name}-{row['id']}"
    parts = _instance_name_parts(meta, permissions)
    if parts is None:
        return lambda row: None
    if len(parts) == 1 and not parts[0].is_reference:
        name, convert = parts[0].name, parts[0].json_value

        def single(row):
            value = row.get(name)
            return None if value is None else str(convert(value))
        return single
    return lambda row: _join_name(parts, row, permissions)


def _join_name(props, row, permissions):
    texts = []
    for prop in props:
        value = row.get(prop.name)
        if value is None:
            continue
        if prop.is_reference:
            value = instance_name(prop.target, value, permissions)
        else:
            value = prop.json_value(value)
        if value is not None:
            texts.append(str(value))
    return " ".join(texts) if texts else None


_AS_IS = DATATYPES["string"].to_json       # the identity: the value is its JSON


def _converter(prop):
    """The property's JSON converter, or None when values are written as they are."""
    return None if prop.json_value is _AS_IS else prop.json_value


def _compiled(meta, plan, permissions):
    """What to write for one plan and one set of permissions, worked out once
    (nested plans too): the entity name, the instance-name function and the
    visible attributes as (name, converter or None, nested compiled or None,
    is collection)."""
    cache = plan.__dict__.setdefault("_compiled", {})
    compiled = cache.get(id(permissions))
    if compiled is None:
        levels = permissions.attribute_levels(meta.name)
        writers = []
        for name, nested in plan.properties.items():
            prop = meta.properties[name]
            if name == "id" or not levels.get(name):
                continue
            writers.append((name, _converter(prop) if nested is None else None,
                            _compiled(prop.target, nested, permissions) if nested else None,
                            prop.is_collection))
        compiled = cache[id(permissions)] = (meta.name, instance_namer(meta, permissions), writers)
    return compiled


def serialize(meta, row, plan, permissions, return_nulls=False):
    if plan is None:
        out = {"_entityName": meta.name}
        name_text = instance_name(meta, row, permissions)
        if name_text is not None or return_nulls:
            out["_instanceName"] = name_text
        out["id"] = str(row["id"])
        return out
    return _write(_compiled(meta, plan, permissions), row, return_nulls)


def _write(compiled, row, return_nulls):
    entity_name, namer, writers = compiled
    out = {"_entityName": entity_name}
    name_text = namer(row)
    if name_text is not None or return_nulls:
        out["_instanceName"] = name_text
    out["id"] = str(row["id"])
    for name, convert, nested, is_collection in writers:
        if name not in row:
            continue
        value = row[name]
        if value is None:
            if return_nulls:
                out[name] = None
        elif nested is None:
            out[name] = value if convert is None else convert(value)
        elif is_collection:
            out[name] = [_write(nested, child, return_nulls) for child in value]
        else:
            out[name] = _write(nested, value, return_nulls)
    return out


def _references(meta, plan, permissions):
    """The plan's visible references for ``count_objects``, nested likewise:
    (name, is collection, inner references, whether those are all leaves)."""
    cache = plan.__dict__.setdefault("_references", {})
    found = cache.get(id(permissions))
    if found is None:
        found = []
        levels = permissions.attribute_levels(meta.name)
        for name, nested in plan.properties.items():
            if nested is not None and levels.get(name):
                prop = meta.properties[name]
                inner = _references(prop.target, nested, permissions)
                found.append((name, prop.is_collection, inner, all(not ref[2] for ref in inner)))
        cache[id(permissions)] = found
    return found


def count_objects(meta, rows, plan, permissions, limit):
    """How many JSON objects serializing ``rows`` along ``plan`` writes, found
    without writing them, or a number above ``limit`` as soon as it is one.
    A loaded row that several parents share (the order of each of its lines)
    is written once per parent, so an answer can grow as N^depth while the
    loaded rows grow linearly; rows with deeper references are counted once
    per plan and remembered."""
    refs = _references(meta, plan, permissions) if plan is not None else ()
    if not refs:
        return len(rows)
    memo = {}

    def count(row, refs):
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
                        found = memo[key] = count(child, inner)
                    total += found
                    if total > limit:
                        return total
        return total

    total = 0
    for row in rows:
        total += count(row, refs)
        if total > limit:
            break
    return total


def _count_leafy(row, refs):
    """One row and its references, none of which has references of its own."""
    total = 1
    for name, is_collection, _, _ in refs:
        value = row.get(name)
        if value is not None:
            total += len(value) if is_collection else 1
    return total
