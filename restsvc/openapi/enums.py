"""Every enum of a document is one named schema, referred to wherever it is
used: a generator then makes one type per enum, not one per parameter.

An enum schema is written where it is used with a ``title`` (the
application's enums: their name, model/valuetypes.py; restsvc's own:
schemas.named_enum); ``name_enums`` moves each into the components (an
application's enum as ``enum_<name>``, restsvc's own under their title) and
leaves a ``$ref`` in its place."""
from collections.abc import Collection
from typing import Any

from .schemas import enum_schema_name, ref

_KEPT = ("type", "title", "enum")       # what the named schema holds; the rest stays at the place


class EnumNameClash(ValueError):
    """Two different enums under one name: a mistake in restsvc's tables."""


def name_enums(document: dict[str, Any], application_enums: Collection[str]) -> None:
    """Replace, in place, every titled enum schema of the document but the
    named ones themselves by a ``$ref`` to its one schema."""
    components: dict[str, Any] = document["components"]["schemas"]

    def name_of(schema: dict[str, Any]) -> str:
        title = schema["title"]
        return enum_schema_name(title) if title in application_enums else title

    def named(schema: dict[str, Any]) -> dict[str, Any]:
        name = name_of(schema)
        body = {key: schema[key] for key in _KEPT if key in schema}
        if components.setdefault(name, body) != body:
            raise EnumNameClash(f"two enums are named {name}: {components[name]} and {body}")
        return ref(name)

    def visit(node: Any) -> Any:
        if isinstance(node, dict):
            if "enum" in node and "title" in node and "$ref" not in node:
                return named(node)
            return {key: visit(value) for key, value in node.items()}
        if isinstance(node, list):
            return [visit(item) for item in node]
        return node

    document["paths"] = visit(document["paths"])
    document["components"]["responses"] = visit(document["components"].get("responses", {}))
    for name, schema in list(components.items()):
        if "enum" in schema and "title" in schema and name == name_of(schema):
            continue        # a named enum itself
        components[name] = visit(schema)
    document["components"]["schemas"] = dict(sorted(components.items()))
