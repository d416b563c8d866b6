"""The shape of an open stream: what it may see, worked out when it opens
and shared by every open stream of that shape (hub.py hands them the same
messages): its entities, its row checks (``checks_of``: streams with equal
checks share the row loads of a batch), its attribute levels and whether it
sees each kind's writer.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from ..data.tenancy import scoped
from ..jsonio import dumps
from .matching import Matcher
from .outbox import KINDS
from .visibility import writer_visible

if TYPE_CHECKING:
    from ..data.access import Access
    from ..model.metadata import MetaClass


def checks_of(access: Access, metas: Iterable[MetaClass]) -> Hashable:
    """What decides which rows the caller reads: subscribers with equal checks
    share the row loads of a batch (None: nothing narrows the caller's rows)."""
    permissions = access.permissions
    metas = list(metas)
    # Every entity's rules: a filter's paths may join rows of entities not followed.
    restricted = sorted(name for name in access.metadata.entities
                        if permissions.row_restricted(name))
    owners = any(hasattr(meta.model, "row_rule") for meta in metas)
    if not restricted and not owners and access.tenant is None:
        return None
    rules = dumps({name: [list(permissions.row_filters(name)),
                          [str(owner) for owner in permissions.row_owners(name)]]
                   for name in restricted})
    return (access.tenant, tuple(sorted(access.session.items())), rules, owners)


class Shape:
    """What the subscribers of one shape may see (their entities, row checks,
    attribute levels, whether they see each kind's writer): worked out when a
    stream opens and shared by every open stream of that shape (``shape_of``);
    ``fan_out`` hands them the same messages."""
    __slots__ = ("metas", "checks", "restricted", "levels", "writer", "view", "__weakref__")

    def __init__(self, metas: dict[str, MetaClass], checks: Hashable, restricted: set[str],
                 levels: dict[str, dict[str, int]], writer: dict[tuple[str, str], bool],
                 view: int) -> None:
        self.metas, self.checks, self.restricted = metas, checks, restricted
        self.levels, self.writer = levels, writer
        self.view = view        # shapes that see an event alike (levels, writer) share it


_views: dict[Hashable, int] = {}     # what a shape sees of an event -> its number


_shapes: weakref.WeakValueDictionary[Hashable, Shape] = weakref.WeakValueDictionary()
_shapes_lock = threading.Lock()


def shape_of(access: Access, metas: Iterable[MetaClass], matcher: Matcher | None) -> Shape:
    """The shape of a stream of ``access`` on ``metas`` with ``matcher``: the
    one open streams of the same shape share (kept while one of them is open)."""
    permissions = access.permissions
    named = {meta.name: meta for meta in metas}
    checks = checks_of(access, named.values())
    restricted = {name for name, meta in named.items()
                  if permissions.row_restricted(name) or scoped(access, meta)}
    levels = {name: permissions.attribute_levels(name) for name in named}
    writer = {(name, kind): writer_visible(permissions, meta, kind)
              for name, meta in named.items() for kind in KINDS}
    seen = (tuple((name, tuple(sorted(levels[name].items()))) for name in sorted(named)),
            tuple(sorted(writer.items())))
    key = (tuple(sorted(named)), checks if restricted or matcher else None,
           None if matcher is None else id(matcher), seen)
    with _shapes_lock:
        found = _shapes.get(key)
        if found is None:
            view = _views.setdefault(seen, len(_views))
            found = _shapes[key] = Shape(named, checks, restricted, levels, writer, view)
        return found
