"""Entity rows -> JSON following a fetch plan and the caller's attribute permissions.

Key order is ``_entityName``, ``_instanceName``, ``id``, then the plan's
attributes. Hidden attributes never appear, nor does an instance name built
from one. Nulls are omitted unless ``return_nulls``.
"""


def _visible(meta, permissions):
    levels = permissions.attribute_levels(meta.name)
    return all(levels.get(name) for name in meta.instance_name)


def instance_name(meta, row, permissions):
    """The instance name from the instance-name attributes, or None."""
    if not meta.instance_name:
        return f"{meta.name}-{row['id']}"
    if not _visible(meta, permissions):
        return None
    parts = []
    for name in meta.instance_name:
        value = row.get(name)
        if value is None:
            continue
        prop = meta.properties[name]
        if prop.is_reference:
            value = instance_name(prop.target, value, permissions)
        else:
            value = prop.json_value(value)
        if value is not None:
            parts.append(str(value))
    return " ".join(parts) if parts else None


def _writers(meta, plan, permissions):
    """The visible attributes of a plan for one set of permissions, worked out
    once: (name, converter or None, nested plan, is collection, target)."""
    cache = plan.__dict__.setdefault("_writers", {})
    writers = cache.get(id(permissions))
    if writers is None:
        levels = permissions.attribute_levels(meta.name)
        writers = cache[id(permissions)] = [
            (name, meta.properties[name].json_value if nested is None else None, nested,
             meta.properties[name].is_collection, meta.properties[name].target)
            for name, nested in plan.properties.items() if name != "id" and levels.get(name)]
    return writers


def serialize(meta, row, plan, permissions, return_nulls=False):
    out = {"_entityName": meta.name}
    name_text = instance_name(meta, row, permissions)
    if name_text is not None or return_nulls:
        out["_instanceName"] = name_text
    out["id"] = str(row["id"])
    if plan is None:
        return out
    for name, convert, nested, is_collection, target in _writers(meta, plan, permissions):
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
