"""The planned write of one row: what ``importer.Importer`` decided from the
JSON, which ``writer.Writer`` then writes (with its children and members)."""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...model.entity import Entity

if TYPE_CHECKING:
    from ...model.metadata import MetaClass, MetaProperty


@dataclass
class Operation:
    meta: "MetaClass"
    creating: bool
    id: str | int | None                # None: the database assigns it (set once inserted)
    values: dict[str, object]              # peewee field name -> Python value
    expected_version: int | tuple[int, ...] | None = None   # a version, or a tuple of them (If-Match)
    # (composition, [Operation]) and (many-to-many attribute, [member id])
    children: list[tuple["MetaProperty", list["Operation"]]] = field(default_factory=list)
    members: list[tuple["MetaProperty", list[str | int]]] = field(default_factory=list)
    instance: Entity | None = None      # creating: the model instance the validators saw, then inserted
    version: int | None = None          # the version the write left (inserted, or the UPDATE's RETURNING)
    save_hooks: tuple[str, ...] = ()    # the model's save hooks (``Shapes.save_hooks``: asked once)
    # The row of its answer, read in the write's own message (``DataWrites.save``'s ``answer``).
    answered: tuple[Any, ...] | None = None

    @property
    def key(self) -> str | int:
        """The id, once known (one the database assigns: after the INSERT)."""
        if self.id is None:
            raise ValueError(f"{self.meta.name}: the row has no id yet")
        return self.id

    @property
    def is_one_statement(self) -> bool:
        """Written by one INSERT or UPDATE, which is atomic on its own."""
        return not self.children and not self.members and not self.save_hooks
