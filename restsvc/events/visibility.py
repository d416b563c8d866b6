"""What a change event may tell a caller: no more than the Entities API does.

An event names the row (entity and id), what kind of change it was, the
attributes written (``changed``) and who wrote it (``username``). The feed
shows each event under the reader's permissions: ``changed`` keeps the
attributes it may view, and ``username`` is shown only when the caller may
view the attribute that records that writer on the row (``createdBy`` for a
CREATE, ``lastModifiedBy`` for an UPDATE, ``deletedBy`` for a DELETE that
marks the row) or may read the entity's history (``HistoryItem``, whose items
name every writer). A webhook delivers events to a URL, with no caller to
judge them by, so registering one, listing it or reading its dead letters
asks for all of that up front (``subscription_refusal``).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..errors import Forbidden
from .outbox import NOT_LISTED, Event

if TYPE_CHECKING:
    from ..model.metadata import MetaClass, Metadata
    from ..security.roles import Permissions

# The attribute that records the writer of each kind of change.
WRITER_OF = {"CREATE": "createdBy", "UPDATE": "lastModifiedBy", "DELETE": "deletedBy"}
HISTORY_ITEM = "HistoryItem"


def writer_visible(permissions: Permissions, meta: MetaClass, kind: str) -> bool:
    """Whether the caller may learn who made a change of ``kind`` to a row of ``meta``."""
    if meta.history is not None and permissions.can(HISTORY_ITEM, "read") \
            and permissions.attribute(HISTORY_ITEM, "username") > 0:
        return True
    attribute = WRITER_OF.get(kind)
    return (attribute is not None and attribute in meta.properties
            and permissions.can(meta.name, "read")
            and permissions.attribute(meta.name, attribute) > 0)


def shown(permissions: Permissions, meta: MetaClass, event: Event) -> Event:
    """``event`` as the caller may see it (changed in place and returned)."""
    levels: Mapping[str, int] = permissions.attribute_levels(meta.name)
    event["changed"] = [name for name in event["changed"] if levels.get(name, 0) >= 1]
    if not writer_visible(permissions, meta, event["kind"]):
        event.pop("username", None)
    return event


def named_attributes(meta: MetaClass) -> list[str]:
    """The attributes an event of ``meta`` may name in ``changed``."""
    return [name for name, prop in meta.properties.items()
            if name not in NOT_LISTED and prop.persistent]


def subscription_refusal(permissions: Permissions, metadata: Metadata, entities: Iterable[str],
                         kinds: Iterable[str], tenant: str | None = None) -> str | None:
    """Why the caller may not see (register, list, read the dead letters of) a
    subscription to ``entities``' events of ``kinds``, or None when it may: a
    webhook's deliveries are not narrowed per caller, so only one who would
    see all of them through the Entities API may ask for them. That is: read
    each entity, with no row-level rule or tenant hiding rows of it, view every
    attribute its events may name and see the writer of each kind."""
    kinds = list(kinds)
    for name in entities:
        meta = metadata.entity(name)
        if meta is None or not permissions.can(name, "read"):
            return f"Reading of the {name} is forbidden"
        if permissions.row_restricted(name):
            return (f"Row-level rules limit the rows of {name} the caller may read; "
                    f"a webhook's events are not narrowed by them")
        if tenant is not None and meta.tenant:
            return (f"The caller reads the rows of {name} of its tenant only; "
                    f"a webhook's events are not narrowed by tenant")
        hidden = [attribute for attribute in named_attributes(meta)
                  if permissions.attribute(name, attribute) < 1]
        hidden += [WRITER_OF.get(kind, kind) for kind in kinds
                   if not writer_visible(permissions, meta, kind)]
        if hidden:
            return (f"Events of {name} would show what the caller may not view: "
                    f"{', '.join(dict.fromkeys(hidden))}")
    return None


def check_subscription(permissions: Permissions, metadata: Metadata, entities: Iterable[str],
                       kinds: Iterable[str], tenant: str | None = None) -> None:
    """403 unless the caller may see the subscription (``subscription_refusal``)."""
    refusal = subscription_refusal(permissions, metadata, entities, kinds, tenant)
    if refusal is not None:
        raise Forbidden("Reading forbidden", refusal)
