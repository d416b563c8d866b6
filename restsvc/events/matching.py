"""Filtered subscriptions: which events of a batch a filter lets through.

A feed stream (``GET /rest/events?entity=X&filter=...``) or a webhook
subscription (its ``filter``) may name one entity and a filter in the
Entities API's grammar (data/read/filters.py: the same JSON, operators,
errors, and the caller's permissions on every property path). ``compiled``
parses it once per subscription into ``Matcher``: the attribute paths it
reads and a predicate over a row's values by path (plain Python closures,
no SQL per event).

``Verdicts`` judges a batch of events for any number of matchers: the rows
of the batch's events are loaded once, with the values of every path the
matchers read (one query per entity and batch, through ``EntityQuery``'s
joins, so a referenced row the reader may not see is a missing one, as in a
search), and each event's row before and after the change is worked out:

- after: the row as it is read now, with the changes of the later events of
  the same batch undone (their ``previous`` values, data/write/outbox.py),
  and first those of events committed after the batch was read (a write
  between the read of the batch and the read of its rows: ``outbox.later``;
  undoing a change the row does not show yet changes nothing);
- before: the row after, with the event's ``previous`` values (an update's
  written attributes, a delete's every attribute); a path through a
  reference the change re-pointed reads the referenced row it had (loaded
  once per batch too).

An event passes (``verdict``) when its row after matches (``True``), for a
DELETE when its row before did; an UPDATE whose row before matched and
after does not passes once as ``False``: the subscriber sees it with
``"match": false`` and drops the row. A path crossing a collection
(``lines.product.name``) is refused in a subscription's filter.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..data.read.filters import Condition, Group, Node, parse_filter
from ..errors import BadRequest, Forbidden
from ..security.roles import SYSTEM_FULL_ACCESS, Permissions
from .outbox import Event, later, previous
from .rowload import Path, Row, Statements, load, referred, row_before, stored

if TYPE_CHECKING:
    from ..data.access import Access
    from ..model.metadata import MetaClass, Metadata

Test = Callable[[Row], bool]
Key = tuple[str, str, Any]     # Matcher.found_by: (operator, dotted path, its values or constant)


class Matcher(NamedTuple):
    """A subscription's filter, compiled once."""
    entity: str
    paths: dict[str, Path]      # dotted path -> its properties
    test: Test
    # What a row the filter lets through satisfies one of at least (byvalue.py
    # finds the filter by it instead of trying it): ("=", a dotted path, the
    # values it may hold), (">", ">=", "<" or "<=", a path, a constant) or
    # ("startsWith", a path, a lower-case text); None: tried on every row
    found_by: tuple[Key, ...] | None = None


def compiled(meta: MetaClass, spec: Any, permissions: Permissions,
             session: dict[str, str] | None = None) -> Matcher:
    """``spec`` (a filter's JSON) for subscriptions to ``meta``: the search's
    400s for what is malformed or not visible to ``permissions``, and 400
    for a path that crosses a collection."""
    tree = parse_filter(meta, spec, permissions, session)
    paths: dict[str, Path] = {}
    test = _compile(tree, paths)
    for dotted, path in paths.items():
        if any(prop.is_collection for prop in path):
            raise BadRequest("Cannot parse entities filter",
                             f"A change filter cannot follow a collection: {dotted}")
    return Matcher(meta.name, paths, test, _index(tree))


def _index(node: Node) -> tuple[Key, ...] | None:
    """Keys of which a row ``node`` lets through satisfies at least one: an
    AND's narrowest item's (an ``=``/``in`` before a comparison before a
    ``startsWith``), every item's of an OR (None when one has none)."""
    if isinstance(node, Condition):
        key = _key(node)
        return None if key is None else (key,)
    found = [_index(item) for item in node.items]
    if node.is_or:
        if not found or any(keys is None for keys in found):
            return None
        return tuple(key for keys in found if keys is not None for key in keys)
    narrowest = sorted((len(keys), _KINDS.index(keys[0][0]) if len(keys) == 1 else 0, order)
                       for order, keys in enumerate(found) if keys)
    return found[narrowest[0][2]] if narrowest else None


def _key(condition: Condition) -> Key | None:
    path, op, value = condition.path, condition.operator, condition.value
    dotted = ".".join(p.name for p in path)
    try:
        if op in ("=", "in") and value is not None:
            values = value if op == "in" else [value]
            return ("=", dotted, frozenset(stored(path[-1], item) for item in values))
    except TypeError:       # a value that cannot be hashed: judged one by one
        return None
    if op in _RANGES and value is not None:
        return (op, dotted, stored(path[-1], value))
    if op == "startsWith" and value is not None:
        return ("startsWith", dotted, str(value).lower())
    return None


def full_permissions(metadata: Metadata) -> Permissions:
    """Every permission: what a webhook's deliveries are judged with (its
    filter was checked with its registering caller's, ``check_unrestricted``)."""
    return Permissions(metadata, [SYSTEM_FULL_ACCESS], [])


def check_unrestricted(matcher: Matcher, permissions: Permissions) -> None:
    """403 when a path of ``matcher`` reaches an entity whose rows the caller's
    row-level roles narrow: a webhook's deliveries are judged for nobody in
    particular (visibility.subscription_refusal says the same of its entities)."""
    for dotted, path in matcher.paths.items():
        for prop in path[:-1]:
            if prop.is_reference and permissions.row_restricted(prop.related.name):
                raise Forbidden("Reading forbidden",
                                f"Row-level rules limit the rows of {prop.related.name} the "
                                f"caller may read; a webhook's filter ({dotted}) is not "
                                f"narrowed by them")


# -- compiling -------------------------------------------------------------------
_RANGES = (">", ">=", "<", "<=")
_KINDS = ("=", *_RANGES, "startsWith")       # the narrower first (Matcher.found_by)
_ORDERED: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<>": operator.ne, ">": operator.gt, ">=": operator.ge,
    "<": operator.lt, "<=": operator.le}


def _compile(node: Node, paths: dict[str, Path]) -> Test:
    if isinstance(node, Group):
        return _group([_compile(item, paths) for item in node.items], node.is_or)
    return _condition(node, paths)


def _group(tests: list[Test], any_of: bool) -> Test:
    """AND (OR) of ``tests``, without a generator per row (the common one- and
    two-condition groups as one call)."""
    if not tests:
        return lambda row: not any_of
    if len(tests) == 1:
        return tests[0]
    if len(tests) == 2:
        first, second = tests
        if any_of:
            return lambda row: first(row) or second(row)
        return lambda row: first(row) and second(row)

    def grouped(row: Row) -> bool:
        for test in tests:
            if test(row) is any_of:
                return any_of
        return not any_of
    return grouped


def _condition(condition: Condition, paths: dict[str, Path]) -> Test:
    """One condition as SQL would judge it: a comparison with a missing
    value (NULL) is never true."""
    key = ".".join(prop.name for prop in condition.path)
    paths[key] = condition.path
    prop, op, value = condition.path[-1], condition.operator, condition.value
    if op in ("isNull", "notEmpty"):
        wanted = value if op == "isNull" else not value
        return lambda row: (row.get(key) is None) == wanted
    if op in ("in", "notIn"):
        values = _collection([stored(prop, item) for item in value])
        inside = op == "in"
        return lambda row: (found := row.get(key)) is not None and (found in values) == inside
    if op in ("contains", "doesNotContain", "startsWith", "endsWith"):
        return _text(key, op, str(value).lower())
    compare, constant = _ORDERED[op], stored(prop, value)
    if op == "=":       # the constant is never None: a missing value never equals it
        return lambda row: bool(row.get(key) == constant)

    def compared(row: Row) -> bool:
        found = row.get(key)
        try:
            return found is not None and bool(compare(found, constant))
        except TypeError:
            return False
    return compared


def _collection(values: list[Any]) -> Collection[Any]:
    """An ``in``'s values as tried: a few in a tuple (compared, not hashed:
    an enum member's hash is Python code), more in a frozenset."""
    return tuple(dict.fromkeys(values)) if len(values) <= 8 else frozenset(values)


def _text(key: str, op: str, text: str) -> Test:
    """The case-insensitive text operators (``db.lower``: Python's ``str.lower``)."""
    if op == "startsWith":
        return lambda row: isinstance(found := row.get(key), str) and found.lower().startswith(text)
    if op == "endsWith":
        return lambda row: isinstance(found := row.get(key), str) and found.lower().endswith(text)
    inside = op == "contains"
    return lambda row: isinstance(found := row.get(key), str) and (text in found.lower()) == inside


# -- judging a batch --------------------------------------------------------------
class EntityPaths(NamedTuple):
    meta: MetaClass
    paths: dict[str, Path]
    statements: Statements      # rowload.py: the rows' statements, made once


def read_paths(metadata: Metadata, matchers: Iterable[Matcher]) -> dict[str, EntityPaths]:
    """What ``Verdicts`` loads for ``matchers``: per entity, every path they read."""
    wanted: dict[str, EntityPaths] = {}
    for matcher in matchers:
        meta = metadata.entity(matcher.entity)
        if meta is not None:
            wanted.setdefault(meta.name, EntityPaths(meta, {}, Statements())).paths.update(matcher.paths)
    return wanted


class Verdicts:
    """The before and after rows of a batch's events, for ``matchers`` (or
    what ``read_paths`` made of them, worked out once for many batches)."""

    def __init__(self, access: Access, events: Sequence[Event],
                 matchers: Iterable[Matcher] | dict[str, EntityPaths]) -> None:
        self.access = access
        wanted = matchers if isinstance(matchers, dict) else read_paths(access.metadata, matchers)
        mine = [event for event in events if event["entity"] in wanted]
        earlier = previous(access.database, [event["id"] for event in mine
                                             if event["kind"] != "CREATE"])
        # event id -> (a DELETE, the row after, the row before)
        self._rows: dict[int, tuple[bool, Row | None, Row | None]] = {}
        self._judges: dict[int, Callable[[Matcher], bool | None]] = {}
        for name, entity in wanted.items():
            of_entity = [event for event in mine if event["entity"] == name]
            if of_entity:
                self._judge(entity, of_entity, earlier)

    def verdict(self, matcher: Matcher, event: Event) -> bool | None:
        """True: the event passes; False: it passes as the row's leaving the
        filter (``"match": false``); None: it does not pass."""
        judge = self._judges.get(event["id"])
        return (self.judge(event) if judge is None else judge)(matcher)

    def judge(self, event: Event) -> Callable[[Matcher], bool | None]:
        """``verdict`` of ``event`` for any matcher, its rows looked up once
        (kept for the batch): an UPDATE's row before is tried only by a
        filter that reads a path whose value the change made differ."""
        found = self._judges.get(event["id"])
        if found is None:
            found = self._judges[event["id"]] = self._judge_event(event)
        return found

    def _judge_event(self, event: Event) -> Callable[[Matcher], bool | None]:
        rows = self._rows.get(event["id"])
        if rows is None:
            return _no_verdict
        name = event["entity"]
        deleting, after, before = rows
        if deleting or after is None:
            if before is None:
                return _no_verdict
            was = True if deleting else False       # a DELETE's row, or a row gone since
            return lambda matcher: was if matcher.entity == name and matcher.test(before) \
                else None
        if before is None:
            return lambda matcher: True if matcher.entity == name and matcher.test(after) \
                else None
        differ = _differing(after, before)

        def judged(matcher: Matcher) -> bool | None:
            if matcher.entity != name:
                return None
            test = matcher.test
            if test(after):
                return True
            if differ.isdisjoint(matcher.paths):    # the row before reads the same
                return None
            return False if test(before) else None
        return judged

    def values(self, event: Event, key: str) -> tuple[Any, Any]:
        """The values of the path ``key`` in the event's row after and before
        (None for a row that is not there)."""
        found = self._rows.get(event["id"])
        if found is None:
            return None, None
        _, after, before = found
        return (None if after is None else after.get(key),
                None if before is None else before.get(key))

    def _judge(self, entity: EntityPaths, events: list[Event], earlier: dict[int, dict[str, Any]]
               ) -> None:
        meta, paths = entity.meta, entity.paths
        keys = list(dict.fromkeys(event["entityId"] for event in events))
        now = load(self.access, meta, keys, paths, statements=entity.statements)
        newer = later(self.access.database, meta.name, keys, events[-1]["id"])
        refers = referred(paths, [earlier[event["id"]] for event in events
                                  if event["id"] in earlier] + [item[2] for item in newer])
        targets = {ref: load(self.access, path[-1].related, ids, subpaths, visible_only=True)
                   for ref, (path, ids, subpaths) in refers.items()}
        state: dict[str, Row | None] = {}
        # Newest first: undo each change in turn, those after the batch before its own.
        for key, kind, values in newer:
            self._undo(meta, paths, state, now, key, kind, values, targets)
        for event in reversed(events):
            key = event["entityId"]
            after = state[key] if key in state else now.get(key)
            before = self._undo(meta, paths, state, now, key, event["kind"],
                                earlier.get(event["id"]), targets)
            deleting = event["kind"] == "DELETE"
            self._rows[event["id"]] = (deleting, None if deleting else after, before)

    @staticmethod
    def _undo(meta: MetaClass, paths: Mapping[str, Path], state: dict[str, Row | None],
              now: dict[str, Row], key: str, kind: str, values: dict[str, Any] | None,
              targets: dict[str, dict[str, Row]]) -> Row | None:
        """The row ``key`` before a change of ``kind`` (``values``: its
        ``previous``), kept in ``state`` as the row the next older change made."""
        after = state[key] if key in state else now.get(key)
        before = None if values is None or kind == "CREATE" else row_before(
            meta, paths, after if kind == "UPDATE" else None, values, targets)
        if kind != "UPDATE" or before is not None:
            state[key] = before
        return before


def _no_verdict(matcher: Matcher) -> None:
    return None


def _differing(after: Row, before: Row) -> set[str]:
    """The paths whose values differ between two rows (of another type counts)."""
    return {key for key in after.keys() | before.keys()
            if not _same(after.get(key, _MISSING), before.get(key, _MISSING))}


def _same(one: Any, other: Any) -> bool:
    return one is other or (type(one) is type(other) and bool(one == other))


_MISSING = object()
