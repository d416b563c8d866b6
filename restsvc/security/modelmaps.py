"""What role declarations mean on the model, worked out once per combination
of roles (security/roles.py): the attribute names a policy may use, embedded
values' attribute levels, the owners whose row rules reach composition
children, and the attributes row rules read through references."""
from collections.abc import Iterable, Iterator, Mapping, MutableMapping

import peewee

from ..jsonio import JsonValue
from ..model.metadata import MetaClass, Metadata

HIDDEN = 0

# (owner entity, the child's foreign key to it) of a composition
Owner = tuple[MetaClass, peewee.ForeignKeyField]


def attribute_names(meta: MetaClass) -> Iterator[str]:
    """The attributes a policy may name: the entity's own and, for each
    embedded value, each of its attributes as ``address.city``."""
    for name, prop in meta.properties.items():
        yield name
        if prop.is_embedded:
            yield from (f"{name}.{part}" for part in prop.related.properties)


def embedded_levels(metadata: Metadata, attributes: Mapping[str, MutableMapping[str, int]]
                    ) -> None:
    """A grant on an embedded value (``address``) covers its attributes; a
    grant on one of them (``address.city``) shows the value with that
    attribute only (the value's own level is the highest of its attributes':
    writing ``{"address": null}`` clears only those the caller may modify)."""
    for name, meta in metadata.entities.items():
        levels = attributes[name]
        for prop in meta.properties.values():
            if prop.is_embedded:
                keys = [f"{prop.name}.{part}" for part in prop.related.properties]
                for key in keys:
                    levels[key] = max(levels[key], levels[prop.name])
                levels[prop.name] = max(levels[key] for key in keys)


def restricted_owners(metadata: Metadata, restricted: Iterable[str]
                      ) -> dict[str, tuple[Owner, ...]]:
    """child entity name -> ((owner meta, back field), ...) for the owners that
    are restricted, directly or through their own owners (a fixpoint, so chains
    and cycles of compositions both end)."""
    owners: dict[str, list[Owner]] = {}
    for meta in metadata.entities.values():
        for prop in meta.properties.values():
            if prop.is_collection and prop.back_field is not None:
                owners.setdefault(prop.related.name, []).append((meta, prop.back_field))
    restricted = set(restricted)
    changed = True
    while changed:
        changed = False
        for child, pairs in owners.items():
            if child not in restricted and any(owner.name in restricted for owner, _ in pairs):
                restricted.add(child)
                changed = True
    found = {child: tuple(pair for pair in pairs if pair[0].name in restricted)
             for child, pairs in owners.items()}
    return {child: pairs for child, pairs in found.items() if pairs}


def keyed_attributes(metadata: Metadata, row_filters: Mapping[str, Iterable[JsonValue]]
                     ) -> set[tuple[str, str]]:
    """(entity name, attribute) that the row filters' conditions read on other
    entities than the one they filter: ``customer.userId`` on Order gives
    ``("Customer", "userId")``."""
    keyed: set[tuple[str, str]] = set()
    for entity_name, specs in row_filters.items():
        for dotted in filter_properties(specs):
            meta: MetaClass | None = metadata.entities[entity_name]
            for step, name in enumerate(dotted.split(".")):
                prop = meta.properties.get(name) if meta is not None else None
                if meta is None or prop is None:
                    break           # the filter parser reports it when the rule is used
                if step:
                    keyed.add((meta.name, name))
                meta = prop.target
    return keyed


def filter_properties(conditions: JsonValue) -> Iterator[str]:
    """Every ``property`` of search filters (lists, groups and conditions)."""
    if isinstance(conditions, list):
        for item in conditions:
            yield from filter_properties(item)
    elif isinstance(conditions, dict):
        if isinstance(conditions.get("property"), str):
            yield conditions["property"]
        yield from filter_properties(conditions.get("conditions"))
