"""Entity rows -> JSON following a fetch plan and the caller's attribute permissions.

Key order is ``_entityName``, ``_instanceName``, ``id``, then the plan's
attributes. Hidden attributes never appear, nor does an instance name built
from one. Nulls are omitted unless ``return_nulls``.
"""


def instance_name(meta, row, permissions):
    """The instance name from the instance-name attributes, or None."""
    if not meta.instance_name:
        return f"{meta.name}-{row['id']}"
    parts = []
    for name in meta.instance_name:
        if permissions.attribute(meta.name, name) == 0:
            return None
        value = row.get(name)
        prop = meta.properties[name]
        if value is not None and prop.is_reference:
            value = instance_name(prop.target, value, permissions) if isinstance(value, dict) else None
        elif value is not None:
            value = prop.json_value(value)
        if value is not None:
            parts.append(str(value))
    return " ".join(parts) if parts else None


def serialize(meta, row, plan, permissions, return_nulls=False):
    out = {"_entityName": meta.name}
    name_text = instance_name(meta, row, permissions)
    if name_text is not None or return_nulls:
        out["_instanceName"] = name_text
    out["id"] = str(row["id"])
    if plan is None:
        return out
    levels = permissions.attribute_levels(meta.name)
    for name, nested in plan.properties.items():
        if name == "id" or not levels.get(name) or name not in row:
            continue
        value = row[name]
        if value is None:
            if return_nulls:
                out[name] = None
            continue
        prop = meta.properties[name]
        if nested is None:
            out[name] = prop.json_value(value)
        elif prop.is_collection:
            out[name] = [serialize(prop.target, child, nested, permissions, return_nulls)
                         for child in value]
        else:
            out[name] = serialize(prop.target, value, nested, permissions, return_nulls)
    return out
