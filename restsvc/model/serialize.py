"""Entity rows -> JSON following a fetch plan and the caller's attribute permissions.

Key order is ``_entityName``, ``_instanceName``, ``id``, then the plan's
attributes. Hidden attributes never appear, nor does an instance name built
from one. Nulls are omitted unless ``return_nulls``.
"""


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


def _compiled(meta, plan, permissions):
    """What to write for one plan and one set of permissions, worked out once:
    the instance-name attributes (None: hidden) and the visible attributes as
    (name, converter or None, nested plan, is collection, target)."""
    cache = plan.__dict__.setdefault("_compiled", {})
    compiled = cache.get(id(permissions))
    if compiled is None:
        levels = permissions.attribute_levels(meta.name)
        writers = [(name, meta.properties[name].json_value if nested is None else None, nested,
                    meta.properties[name].is_collection, meta.properties[name].target)
                   for name, nested in plan.properties.items() if name != "id" and levels.get(name)]
        parts = _instance_name_parts(meta, permissions) if meta.instance_name else ()
        compiled = cache[id(permissions)] = (parts, writers)
    return compiled


def serialize(meta, row, plan, permissions, return_nulls=False):
    out = {"_entityName": meta.name}
    if plan is None:
        name_text = instance_name(meta, row, permissions)
        writers = ()
    else:
        parts, writers = _compiled(meta, plan, permissions)
        if parts == ():
            name_text = f"{meta.name}-{row['id']}"
        elif parts is None:
            name_text = None
        elif len(parts) == 1 and not parts[0].is_reference:
            value = row.get(parts[0].name)
            name_text = None if value is None else str(parts[0].json_value(value))
        else:
            name_text = _join_name(parts, row, permissions)
    if name_text is not None or return_nulls:
        out["_instanceName"] = name_text
    out["id"] = str(row["id"])
    for name, convert, nested, is_collection, target in writers:
        if name not in row:
            continue
        value = row[name]
        if value is None:
            if return_nulls:
                out[name] = None
        elif nested is None:
            out[name] = convert(value)
        elif is_collection:
            out[name] = [serialize(target, child, nested, permissions, return_nulls)
                         for child in value]
        else:
            out[name] = serialize(target, value, nested, permissions, return_nulls)
    return out


def _references(meta, plan, permissions):
    """The plan's visible references for ``count_objects``, nested likewise:
    (name, is collection, inner references, whether those are all leaves)."""
    cache = plan.__dict__.setdefault("_references", {})
    found = cache.get(id(permissions))
    if found is None:
        found = []
        for name, _, nested, is_collection, target in _compiled(meta, plan, permissions)[1]:
            if nested is not None:
                inner = _references(target, nested, permissions)
                found.append((name, is_collection, inner, all(not ref[2] for ref in inner)))
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
