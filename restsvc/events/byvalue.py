"""Subscriptions (or groups of streams) found by their filter's value, not
tried one by one: handout.py and hub.py index the filters of their
subscribers here (``ByValue``), once for as long as the same subscribers
stay, and ask per event which may let it through (each is then judged,
matching.py ``Verdicts``).

A filter whose top-level AND has an ``=`` or ``in`` (``Matcher.lookup``)
is found by the value the row holds after or before the change; one with a
comparison instead (``Matcher.bound``: ``>``, ``>=``, ``<``, ``<=``) by the
side of its constant the row's value is on (the constants kept in order, a
bisection per event). The others are tried on every event.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .matching import Matcher, Verdicts
    from .outbox import Event

T = TypeVar("T")


class ByValue(Generic[T]):
    """Items (subscriptions, groups of streams) found by their filter's
    ``lookup`` (by the value a row holds) or ``bound`` (by the side of its
    constant the row's value is on), not by trying every filter."""

    def __init__(self) -> None:
        # (entity, dotted path) -> value -> the items whose filter's lookup holds it
        self.entries: dict[tuple[str, str], dict[Any, list[T]]] = {}
        # (entity, dotted path, operator) -> (the bounds' constants in order, their items)
        self.ranges: dict[tuple[str, str, str], tuple[list[Any], list[T]]] = {}

    def __bool__(self) -> bool:
        """Whether it holds any item."""
        return bool(self.entries or self.ranges)

    def add(self, matcher: Matcher, item: T) -> bool:
        """Index ``item`` by ``matcher``'s lookup or bound; False when it has
        neither (or a bound that does not order with the others')."""
        if matcher.lookup is not None:
            path, values = matcher.lookup
            by_value = self.entries.setdefault((matcher.entity, path), {})
            for value in values:
                by_value.setdefault(value, []).append(item)
            return True
        if matcher.bound is None:
            return False
        path, op, constant = matcher.bound
        constants, items = self.ranges.setdefault((matcher.entity, path, op), ([], []))
        try:
            spot = bisect.bisect_right(constants, constant)
        except TypeError:
            return False
        constants.insert(spot, constant)
        items.insert(spot, item)
        return True

    def found(self, event: Event, verdicts: Verdicts) -> Iterator[T]:
        """The items whose lookup holds (whose bound lets through) the value of
        the event's row after or before the change (an item may come twice)."""
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
