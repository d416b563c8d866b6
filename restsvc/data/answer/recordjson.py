"""A record (a row of Python values by name, records.py, or one application
code made) as entity JSON, for application code: services' results and
``to_entity_json``. It follows its fetch plan and the caller's attribute
permissions as the answers' row writers do (rowwriters.py): the same keys in
the same order, each value as the attribute's JSON (``value_writer``), the
same instance names (names.py); hidden attributes and a name built from one
are left out, nulls too unless ``return_nulls``."""
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...jsonio import JsonObject, loads
from .names import instance_namer
from .rawvalues import value_writer

if TYPE_CHECKING:
    from ...model.meta import FetchPlan
    from ...model.metadata import MetaClass
    from ...security.roles import Permissions


def record_json(meta: "MetaClass", row: Mapping[str, Any], plan: "FetchPlan | None",
                permissions: "Permissions", return_nulls: bool = False) -> JsonObject:
    """The entity JSON of ``row`` along ``plan`` (None: ``_entityName``,
    ``_instanceName`` and ``id`` only)."""
    name = instance_namer(meta, permissions)(row)
    out: JsonObject = {"_entityName": meta.name}
    if name is not None or return_nulls:
        out["_instanceName"] = name
    out["id"] = str(row["id"])
    _attributes(out, meta, row, plan, permissions, return_nulls,
                permissions.attribute_levels(meta.name))
    return out


def _attributes(out: JsonObject, meta: "MetaClass", row: Mapping[str, Any],
                plan: "FetchPlan | None", permissions: "Permissions", return_nulls: bool,
                levels: Mapping[str, Any]) -> bool:
    """The plan's attributes ``row`` holds into ``out``; whether one is set."""
    found = False
    for name, nested in plan.properties.items() if plan is not None else ():
        if name == "id" or not levels.get(name) or name not in row:
            continue
        value, prop = row[name], meta.properties[name]
        if value is None:
            if return_nulls:
                out[name] = None
            continue
        found = True
        if nested is None:
            text = value_writer(prop)(value)
            out[name] = None if text is None else loads(text)
        elif prop.is_embedded:      # the owner's permissions on address.city decide
            owner = permissions.attribute_levels(meta.name)
            inner: JsonObject = {}
            if _attributes(inner, prop.related, value, nested, permissions, return_nulls,
                           {part: owner.get(f"{name}.{part}") for part in nested.properties}) \
                    and (inner or return_nulls):
                out[name] = inner
            elif return_nulls:
                out[name] = None
        elif prop.is_collection:
            out[name] = [record_json(prop.related, child, nested, permissions, return_nulls)
                         for child in value]
        else:
            out[name] = record_json(prop.related, value, nested, permissions, return_nulls)
    return found
