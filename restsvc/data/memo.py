"""What is worked out once per plan, permissions or entity, in one kind of memo.

A ``Memo`` is a bounded dict with one eviction rule: when it is full, it is
emptied and filled again by what is asked next. Keys are values (names, shapes, ids of
objects); an entry that is keyed by an object's id holds that object in its
value, so that the id cannot name another object while the entry lives
(``Memo.owned``).
"""
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

V = TypeVar("V")
OwnerT = TypeVar("OwnerT")


class Memo(dict[Hashable, V]):
    """A bounded dict of values worked out once; ``size``: entries kept at
    most. ``get`` is the dict's own (the look-up costs no Python call)."""

    __slots__ = ("size", "name")

    def __init__(self, name: str, size: int) -> None:
        super().__init__()
        self.name, self.size = name, size

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` for ``key``; a full memo is emptied first."""
        if len(self) >= self.size:
            self.clear()
        self[key] = value
        return value

    def find(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value kept for ``key``, worked out by ``build`` the first time."""
        found = self.get(key)
        if found is None:
            found = self.put(key, build())
        return found


class Owned(Generic[OwnerT, V]):
    """An entry of a memo keyed by ``id(owner)``: the owner is held, so its id
    is not reused while the entry lives."""

    __slots__ = ("owner", "value")

    def __init__(self, owner: OwnerT, value: V) -> None:
        self.owner, self.value = owner, value


def owned(memo: "Memo[Owned[OwnerT, V]]", owner: OwnerT, variant: Hashable, build: Callable[[], V]) -> V:
    """What ``build()`` works out for ``owner`` (and ``variant``), kept in ``memo``."""
    key = (id(owner), variant)
    entry = memo.get(key)
    if entry is None or entry.owner is not owner:
        entry = memo.put(key, Owned(owner, build()))
    return entry.value


class PlanFacts:
    """What is worked out once for one fetch plan object (``plan_facts``),
    each by the module that needs it: its loading plan and versioned
    loading plan (loader.py, etags.py), its shape and tag key (rowwriters.py,
    etags.py), and as a loading plan: how its rows are read, its
    many-to-many columns, its columns by name and the references inside its
    embedded values (rows.py, nestedrows.py)."""

    __slots__ = ("plan", "loading", "versioned", "shape", "tag_key", "raw_kind", "links",
                 "key_columns", "embedded_references")

    def __init__(self, plan: object) -> None:
        self.plan = plan
        self.loading: Any = None
        self.versioned: Any = None
        self.shape: Any = None
        self.tag_key: str | None = None
        self.raw_kind: Any = UNKNOWN
        self.links: Any = None
        self.key_columns: Any = None
        self.embedded_references: Any = None


UNKNOWN = object()      # a fact not worked out yet, where None is a fact
_PLANS: "Memo[PlanFacts]" = Memo("plans", 4096)     # inline plans are new objects per request


def plan_facts(plan: object) -> PlanFacts:
    """The ``PlanFacts`` of a plan object (held by them: its id is not reused meanwhile)."""
    found = _PLANS.get(id(plan))
    if found is None or found.plan is not plan:
        found = _PLANS.put(id(plan), PlanFacts(plan))
    return found


class EntityFacts:
    """What is worked out once per entity (``entity_facts``), each by the
    module that needs it: how a row's id is read (columns.py), cursor
    bindings and the entity's own columns by id (cursors.py), the attributes
    its history records and how it writes their values (write/history.py) and the attribute an event names
    for each field and the attribute each column holds (write/outbox.py)."""

    __slots__ = ("meta", "row_id", "cursor_bindings", "cursor_columns", "recorded", "recorded_json",
                 "event_names", "held")

    def __init__(self, meta: object) -> None:
        self.meta = meta
        self.row_id: Any = None
        self.cursor_bindings: dict[str | None, str] = {}
        self.cursor_columns: dict[int, str] | None = None
        self.recorded: Any = None
        self.recorded_json: Any = None
        self.event_names: dict[str, str] | None = None
        self.held: Any = None


class ColumnFacts:
    """What is worked out once per column or attribute (``column_facts``): a
    field's converter and stored form (columns.py), a many-to-many
    attribute's link-keys column and its parsed link texts, per kind of
    database (members.py)."""

    __slots__ = ("owner", "converter", "stored", "member_column", "parsed_keys")

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self.converter: Any = UNKNOWN
        self.stored: Any = None
        self.member_column: dict[bool, Any] = {}        # is SQLite -> the column
        self.parsed_keys: dict[bool, dict[Any, Any]] = {}   # is SQLite -> text -> keys


_ENTITIES: "Memo[EntityFacts]" = Memo("entities", 1024)
_COLUMNS: "Memo[ColumnFacts]" = Memo("columns", 8192)


def entity_facts(meta: object) -> EntityFacts:
    """The ``EntityFacts`` of an entity's metadata (held by them: its id is not reused meanwhile)."""
    found = _ENTITIES.get(id(meta))
    if found is None or found.meta is not meta:
        found = _ENTITIES.put(id(meta), EntityFacts(meta))
    return found


def column_facts(owner: object) -> ColumnFacts:
    """The ``ColumnFacts`` of a Peewee field or an attribute's metadata."""
    found = _COLUMNS.get(id(owner))
    if found is None or found.owner is not owner:
        found = _COLUMNS.put(id(owner), ColumnFacts(owner))
    return found
