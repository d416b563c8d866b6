"""Subscriptions (or groups of streams) found by their filter's value, not
tried one by one: handout.py and hub.py index the filters of their
subscribers here (``ByValue``), once for as long as the same subscribers
stay, and ask per event which may let it through (each is then judged,
matching.py ``Verdicts``).

A filter is found by its ``Matcher.found_by`` (matching.py: keys of which a
row it lets through satisfies one at least; an OR's are those of its
items): by the value the row holds after or before the change (an ``=`` or
``in``), by the side of a comparison's constant it is on (``>``, ``>=``,
``<``, ``<=``: the constants kept in order, a bisection per event) or by
its beginning (``startsWith``: a look-up per length of text). The others
are tried on every event.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .matching import Matcher, Verdicts
    from .outbox import Event

T = TypeVar("T")
_RANGES = (">", ">=", "<", "<=")


class ByValue(Generic[T]):
    """Items (subscriptions, groups of streams) found by their filter's
    ``found_by``, not by trying every filter."""

    def __init__(self) -> None:
        # (entity, dotted path) -> value -> the items one of whose keys holds it
        self.entries: dict[tuple[str, str], dict[Any, list[T]]] = {}
        # (entity, dotted path, operator) -> (the constants in order, their items)
        self.ranges: dict[tuple[str, str, str], tuple[list[Any], list[T]]] = {}
        # (entity, dotted path) -> (the texts' lengths, text -> the items)
        self.prefixes: dict[tuple[str, str], tuple[set[int], dict[str, list[T]]]] = {}

    def __bool__(self) -> bool:
        """Whether it holds any item."""
        return bool(self.entries or self.ranges or self.prefixes)

    def add(self, matcher: Matcher, item: T) -> bool:
        """Index ``item`` by ``matcher``'s keys; False when it has none (or a
        comparison whose constant does not order with the others')."""
        keys = matcher.found_by
        if keys is None:
            return False
        spots = []
        for op, path, value in keys:
            if op in _RANGES:
                constants = self.ranges.get((matcher.entity, path, op), ([], []))[0]
                try:
                    spots.append(bisect.bisect_right(constants, value))
                except TypeError:
                    return False
        for op, path, value in keys:
            if op == "=":
                by_value = self.entries.setdefault((matcher.entity, path), {})
                for one in value:
                    by_value.setdefault(one, []).append(item)
            elif op == "startsWith":
                sizes, by_text = self.prefixes.setdefault((matcher.entity, path), (set(), {}))
                sizes.add(len(value))
                by_text.setdefault(value, []).append(item)
            else:
                constants, items = self.ranges.setdefault((matcher.entity, path, op), ([], []))
                spot = spots.pop(0)
                constants.insert(spot, value)
                items.insert(spot, item)
        return True

    def found(self, event: Event, verdicts: Verdicts) -> Iterator[T]:
        """The items one of whose keys the event's row after or before the
        change satisfies (an item may come more than once)."""
        name = event["entity"]
        for (entity, path), by_value in self.entries.items():
            if name == entity:
                for value in _values(event, path, verdicts):
                    try:
                        yield from by_value.get(value, ())
                    except TypeError:   # a value that cannot be hashed matches no ``=``
                        continue
        for (entity, path, op), (constants, items) in self.ranges.items():
            if name == entity:
                for value in _values(event, path, verdicts):
                    if value is not None:       # a missing value passes no comparison
                        yield from _beyond(op, value, constants, items)
        for (entity, path), (sizes, by_text) in self.prefixes.items():
            if name == entity:
                for value in _values(event, path, verdicts):
                    if isinstance(value, str):
                        text = value.lower()
                        for size in sizes:
                            if size <= len(text):
                                yield from by_text.get(text[:size], ())


def _values(event: Event, path: str, verdicts: Verdicts) -> tuple[Any, ...]:
    after, before = verdicts.values(event, path)
    return (after,) if before == after else (after, before)


def _beyond(op: str, value: Any, constants: list[Any], items: list[T]) -> list[T]:
    """The items whose ``value op constant`` holds (``constants`` in order)."""
    try:
        if op == ">":
            return items[:bisect.bisect_left(constants, value)]
        if op == ">=":
            return items[:bisect.bisect_right(constants, value)]
        if op == "<":
            return items[bisect.bisect_right(constants, value):]
        return items[bisect.bisect_left(constants, value):]
    except TypeError:       # a value that does not order with them: every one is tried
        return items
