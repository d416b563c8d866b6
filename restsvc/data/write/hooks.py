"""The lifecycle hooks of application models inside the write's transaction,
as the write path (writer.py) calls them; restsvc/docs/hooks.md is the manual.

Each is an optional method of the model:

    before_save(cls, values, creating, entity_id)   a classmethod: before the statement of a
                                                    create or update (``values``: what it writes)
    after_save(self, created)                       once the row and what it owns are written
    before_delete(self)                             before a delete's statement (or marking)
    after_delete(self)                              after it

A hook that declares a parameter ``data`` is given the caller's ``DataAccess``
(data/bound.py; ``bind`` makes it): what it writes goes through this same
write path, in the same transaction, under the caller's permissions and in
the caller's name (``data.as_service(name)``: the service's). An exception
rolls the whole write back: an ``ApiError`` (``restsvc.Invalid``: 400 in the
validation form) answers its status and message, anything else 500.

A model with a save hook is never written by a lone statement nor left
pending in a bulk (``Operation.is_one_statement``): its hooks see the rows
written before them.
"""
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..columns import among

if TYPE_CHECKING:
    from ...model.entity import Entity
    from ..access import Access
    from .operation import Operation

# The caller's DataAccess of an Access (data/bound.py), made by the data manager.
Bind = Callable[["Access"], Any]


class Hooks:
    """The hooks of one writer's writes, with the caller's data access."""

    def __init__(self, access: "Access", bind: Bind | None) -> None:
        self.access = access
        self.bind = bind

    def before_save(self, operation: "Operation") -> None:
        """The model's ``before_save``: what it sets in ``values`` is written."""
        if "before_save" not in operation.save_hooks:
            return
        model = operation.meta.model
        self.call(model, "before_save", operation.values, operation.creating, operation.id)
        if operation.instance is not None:      # a create inserts its instance
            for name, value in operation.values.items():
                setattr(operation.instance, name, value)

    def after_save(self, operation: "Operation", instance: "Entity | None") -> None:
        """The model's ``after_save`` on the row as written."""
        if "after_save" in operation.save_hooks:
            model = operation.meta.model
            self.call(instance or model.get_by_id(operation.id), "after_save", operation.creating)

    def before_delete(self, model: "type[Entity]", ids: "Sequence[Any]") -> "list[Entity]":
        """The rows a delete of ``ids`` removes, as they are, each given to
        ``before_delete``; none are read when the model has no delete hook."""
        if not (hasattr(model, "before_delete") or hasattr(model, "after_delete")):
            return []
        doomed = list(model.select().where(among(model.id, ids)))
        for instance in doomed:
            self.call(instance, "before_delete")
        return doomed

    def after_delete(self, doomed: "list[Entity]") -> None:
        for instance in doomed:
            self.call(instance, "after_delete")

    def call(self, owner: object, name: str, *args: object) -> None:
        """``owner.<name>(*args)`` if the model has that hook, given ``data`` if it asks."""
        hook = getattr(owner, name, None)
        if hook is None:
            return
        if not _wants_data(getattr(hook, "__func__", hook)):
            hook(*args)
            return
        if self.bind is None:
            raise TypeError(f"{name} asks for data, which this write cannot give")
        hook(*args, data=self.bind(self.access))


@functools.lru_cache(maxsize=None)
def _wants_data(function: Callable[..., Any]) -> bool:
    return "data" in inspect.signature(function).parameters
