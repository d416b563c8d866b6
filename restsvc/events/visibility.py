"""What a change event may tell a caller: no more than the Entities API does.

An event names the row (entity and id), what kind of change it was, the
attributes written (``changed``) and who wrote it (``username``). The feed
shows each event under the reader's permissions: ``changed`` keeps the
attributes it may view, and ``username`` is shown only when the caller may
view the attribute that records that writer on the row (``createdBy`` for a
CREATE, ``lastModifiedBy`` for an UPDATE, ``deletedBy`` for a DELETE that
marks the row) or may read the entity's history (``HistoryItem``, whose items
name every writer). A webhook delivers events to a URL, with no caller to
judge them by, so registering one asks for all of that up front
(``check_subscription``).
"""
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import Forbidden
from .outbox import NOT_LISTED

# The attribute that records the writer of each kind of change.
WRITER_OF = {"CREATE": "createdBy", "UPDATE": "lastModifiedBy", "DELETE": "deletedBy"}
HISTORY_ITEM = "HistoryItem"


def writer_visible(permissions: Any, meta: Any, kind: str) -> bool:
    """Whether the caller may learn who made a change of ``kind`` to a row of ``meta``."""
    if meta.history is not None and permissions.can(HISTORY_ITEM, "read") \
            and permissions.attribute(HISTORY_ITEM, "username") > 0:
        return True
    attribute = WRITER_OF.get(kind)
    return (attribute is not None and attribute in meta.properties
            and permissions.can(meta.name, "read")
            and permissions.attribute(meta.name, attribute) > 0)


def shown(permissions: Any, meta: Any, event: dict[str, Any]) -> dict[str, Any]:
    """``event`` as the caller may see it (changed in place and returned)."""
    levels: Mapping[str, int] = permissions.attribute_levels(meta.name)
    event["changed"] = [name for name in event["changed"] if levels.get(name, 0) >= 1]
    if not writer_visible(permissions, meta, event["kind"]):
        event.pop("username", None)
    return event


def named_attributes(meta: Any) -> list[str]:
    """The attributes an event of ``meta`` may name in ``changed``."""
    return [name for name, prop in meta.properties.items()
            if name not in NOT_LISTED and prop.persistent]


def check_subscription(permissions: Any, metadata: Any, entities: Iterable[str],
                       kinds: Iterable[str]) -> None:
    """403 unless the caller may read each entity, view every attribute its
    events may name and see the writer of each kind: a webhook's deliveries
    are not narrowed per caller, so it may only be asked for by one who
    would see all of them through the Entities API."""
    for name in entities:
        meta = metadata.entity(name)
        if not permissions.can(name, "read"):
            raise Forbidden("Reading forbidden", f"Reading of the {name} is forbidden")
        hidden = [attribute for attribute in named_attributes(meta)
                  if permissions.attribute(name, attribute) < 1]
        hidden += [WRITER_OF.get(kind, kind) for kind in kinds
                   if not writer_visible(permissions, meta, kind)]
        if hidden:
            raise Forbidden("Reading forbidden",
                            f"Events of {name} would show what the caller may not view: "
                            f"{', '.join(dict.fromkeys(hidden))}")
