"""The one row shape: what a load gives (``RawRows``).

Every load gives the database's value tuples in the loader's column order
(the id first, then the plan's columns: ``address.city`` for an embedded
value's, a many-to-many attribute's link text), with what was loaded for
them: the members of its many-to-many attributes (members.py), the rows of
its to-one references by foreign key and of its compositions by parent
(nestedrows.py), and the values of its transient attributes after the
columns. Answers write them (rowwriters.py); Python code reads them
converted (records.py) or through a view (``nestedrows.RawView``).
"""
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..columns import row_id
from ..memo import plan_facts
from .members import shown_lists

if TYPE_CHECKING:
    from ...model.meta import FetchPlan, MetaClass

Values = tuple[Any, ...]        # one row of database values (any the driver gives)
Key = Any                       # a foreign key, an id or a link text, as the database gives it
Converter = Callable[[Any], Any]


class Members(NamedTuple):
    """What was loaded for one many-to-many attribute of a page (members.py)."""
    counts: Counter[Key]                # link text -> how many rows have it
    keys: dict[Key, list[Key]]          # link text -> its member keys, in order
    by_key: dict[Key, Values]           # member key -> the member's row, if the caller sees it
    rows: Sequence[Values]              # the members loaded (RawRows, or none: [])
    complete: bool                      # whether the caller sees every member named


class Targets(NamedTuple):
    """The rows of one to-one reference of a page, by foreign key (None: not seen)."""
    rows: "RawRows"
    by_key: dict[Key, Values | None]


class Children(NamedTuple):
    """The rows of one composition of a page, by their parent's id, in the loader's order."""
    rows: "RawRows"
    groups: dict[Key, list[Values]]


class RawRows(list[Values]):
    """The database's value tuples of one load along a loading plan, and what
    was loaded for them. ``links``: the plan's many-to-many attributes, each
    the position of its link text; ``transients``: the names of the values
    worked out after loading, each row's last ones (nestedrows.py)."""

    def __init__(self, values: Iterable[Values], meta: "MetaClass", loading: "FetchPlan",
                 names: tuple[str, ...], converting: list[tuple[int, Converter]]) -> None:
        super().__init__(values)
        self.meta, self.loading = meta, loading
        self.names, self.converting = names, converting
        self.links = links_of(meta, loading, names)
        self.members: dict[str, Members] = {}
        self.nested = False     # loaded with what the caller may read (nestedrows.py)
        self.targets: dict[str, Targets] = {}
        self.children: dict[str, Children] = {}
        self.transients: tuple[str, ...] = ()
        self.view: Any = None   # the class of what transient attributes see of a row
        self._shown: dict[str, tuple[dict[Key, list[Values]], Sequence[Values]]] = {}

    def shown_members(self, name: str) -> tuple[dict[Key, list[Values]], Sequence[Values]]:
        """(link text -> the members the caller sees, in key order; the
        members loaded) of one many-to-many attribute, worked out once."""
        found = self._shown.get(name)
        if found is None:
            members = self.members[name]
            found = self._shown[name] = (
                shown_lists(members.counts, members.keys, members.by_key), members.rows)
        return found

    def extend(self, more: Iterable[Values]) -> None:
        """Another chunk of the same load (loader._by_ids): its rows and what
        was loaded for them (each of which may be an empty list)."""
        super().extend(more)
        if not isinstance(more, RawRows):
            return
        for name, theirs in more.members.items():
            mine = self.members.get(name)
            self.members[name] = theirs if mine is None else Members(
                mine.counts + theirs.counts, {**mine.keys, **theirs.keys},
                {**mine.by_key, **theirs.by_key}, _joined(mine.rows, theirs.rows),
                mine.complete and theirs.complete)
        for name, target in more.targets.items():
            had = self.targets.get(name)
            self.targets[name] = target if had is None else Targets(
                _joined(had.rows, target.rows), {**had.by_key, **target.by_key})
        for name, children in more.children.items():
            was = self.children.get(name)
            self.children[name] = children if was is None else Children(
                _joined(was.rows, children.rows), {**was.groups, **children.groups})


def _joined(rows: Sequence[Values], more: Sequence[Values]) -> Any:
    """The rows of two chunks of one load (an empty list where none were loaded)."""
    if not isinstance(rows, RawRows):
        return more
    if isinstance(more, RawRows):
        rows.extend(more)
    return rows


def links_of(meta: "MetaClass", loading: "FetchPlan",
             names: tuple[str, ...]) -> list[tuple[str, int]]:
    """(name, position of the link text) of the plan's many-to-many attributes."""
    facts = plan_facts(loading)
    links: list[tuple[str, int]] | None = facts.links
    if links is None:
        links = facts.links = [(name, names.index(name)) for name in loading.properties
                               if meta.properties[name].link is not None]
    return links


class KeyRows:
    """What ``cursors.sort_key`` reads of a page: its last row, the rows from
    the end; of a row only the columns asked for are converted."""

    def __init__(self, raw: RawRows) -> None:
        self._raw = raw

    def __getitem__(self, index: int) -> "KeyRow":
        return KeyRow(self._raw, index)

    def __reversed__(self) -> Iterator["KeyRow"]:
        return (KeyRow(self._raw, index) for index in range(len(self._raw) - 1, -1, -1))


class KeyRow:
    """One row of a page by column name, each value converted when read."""

    def __init__(self, raw: RawRows, index: int) -> None:
        self._values, self._columns = raw[index], _key_columns(raw)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> Any:
        position, convert = self._columns[name]
        value = self._values[position]
        return value if value is None or convert is None else convert(value)


def _key_columns(raw: RawRows) -> dict[str, tuple[int, Converter | None]]:
    """Column name -> (position, converter or None) of a plan's rows."""
    facts = plan_facts(raw.loading)
    found: dict[str, tuple[int, Converter | None]] | None = facts.key_columns
    if found is None:
        convert = dict(raw.converting)
        found = facts.key_columns = {
            name: (position, convert.get(position)) for position, name in enumerate(raw.names)}
    return found


def tag_row(rows: RawRows) -> dict[str, Any]:
    """What ``etags.entity_tag`` reads of the first row of ``rows``: id and
    version, converted as the loader converts them."""
    values, version = rows[0], _key_columns(rows).get("version")
    return {"id": row_id(rows.meta)(values),
            "version": None if version is None else values[version[0]]}
