"""Route matching: the one object that tells which rule of the route table
(``app.url_map``) a request's path and method take, and with what arguments.

``Router.match`` answers in three steps, each as Werkzeug's matcher would:

1. Recent answers: a bounded memo of (path, method) -> (rule, arguments). A
   path matched once costs a dict lookup the next time; when the memo is
   full it is emptied (its one eviction rule), so odd paths cannot grow it.
   Refusals (404, 405, redirects) are not kept: they are asked again.
2. A tree of segments. Werkzeug's matcher costs several microseconds a path
   (about four times the tree's), and a service whose URLs carry ids sees
   few paths twice. Most rules are whole segments, each static text or a
   plain ``<name>`` (Werkzeug's default converter: any non-empty segment);
   the tree matches those as Werkzeug does: static before ``<name>`` at every
   segment, backtracking when the method does not match, rules in table
   order.
3. Werkzeug's matcher, for whatever the tree is not sure of: a path with an
   empty segment (trailing or doubled slashes), one under a rule the tree
   cannot read (another converter, part of a segment, defaults, hosts), no
   rule for the method (404 or 405). It decides as before, and raises what
   it raises (``NotFound``, ``MethodNotAllowed`` with the allowed methods,
   ``RequestRedirect``).
"""
import re
from collections.abc import Mapping
from typing import Final, cast

from werkzeug.routing import Map, Rule

# What a rule's handler receives as keyword arguments: text from the tree,
# whatever a converter makes of its segment from Werkzeug (an int, ...).
Arguments = Mapping[str, object]
Route = tuple[Rule, Arguments]

RECENT: Final = 4096        # answers the memo keeps at most
_PLAIN_PARAMETER: Final = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>\Z")


class _Node:
    __slots__ = ("static", "parameter", "rules", "unsure")

    def __init__(self) -> None:
        self.static: dict[str, _Node] = {}           # segment text -> the node after it
        self.parameter: _Node | None = None          # the node after a <name> segment
        # The rules ending here, each with its argument names in order, in table order.
        self.rules: list[tuple[Rule, tuple[str, ...]]] = []
        # A rule the tree cannot read starts with the static segments leading here.
        self.unsure = False


class Router:
    def __init__(self, url_map: Map) -> None:
        self._adapter = url_map.bind("restsvc")
        self._recent: dict[tuple[str, str], Route] = {}
        self._root = _Node()
        for rule in url_map.iter_rules():
            segments = _plain_segments(rule)
            if segments is None:
                self._static_node(_static_prefix(rule.rule)).unsure = True
            else:
                self._add(rule, segments)

    def _static_node(self, segments: list[str]) -> _Node:
        node = self._root
        for segment in segments:
            node = node.static.setdefault(segment, _Node())
        return node

    def _add(self, rule: Rule, segments: list[str]) -> None:
        node, names = self._root, []
        for segment in segments:
            match = _PLAIN_PARAMETER.match(segment)
            if match is None:
                node = node.static.setdefault(segment, _Node())
                continue
            names.append(match.group(1))
            if node.parameter is None:
                node.parameter = _Node()
            node = node.parameter
        node.rules.append((rule, tuple(names)))

    def match(self, path: str, method: str) -> Route:
        """(rule, arguments), or raise what Werkzeug's matcher raises (404,
        405, a redirect). The rule's template names the route in logs and
        metrics."""
        key = (path, method)
        found = self._recent.get(key)
        if found is None:
            found = self._find(path, method)
            if len(self._recent) >= RECENT:
                self._recent.clear()
            self._recent[key] = found
        return found

    def _find(self, path: str, method: str) -> Route:
        segments = path.split("/")[1:]
        if "" not in segments and not self._root.unsure:
            try:
                found = _straight(self._root, segments, method)
            except _Unsure:
                found = None
            if found is not None:
                return found
        # return_rule=True: Werkzeug answers the Rule itself, not its endpoint.
        return cast(Route, self._adapter.match(path, method, return_rule=True))


class _Unsure(Exception):
    """The path starts with the static segments of a rule the tree cannot read."""


def _straight(node: _Node, segments: list[str], method: str) -> Route | None:
    """``_walk`` without recursion while no node offers both a static segment
    and a ``<name>`` for the path (no way back needed): most paths."""
    values: list[str] = []
    root = node
    for segment in segments:
        child = node.static.get(segment)
        if child is None:
            if node.parameter is None:
                return None
            values.append(segment)
            node = node.parameter
        elif node.parameter is not None:        # both: the walk that can go back
            return _walk(root, segments, 0, method, [])
        elif child.unsure:
            raise _Unsure
        else:
            node = child
    return _rule_of(node, method, values)


def _rule_of(node: _Node, method: str, values: list[str]) -> Route | None:
    """The first rule of the path's last node for ``method``, with its arguments."""
    for rule, names in node.rules:
        if rule.methods is None or method in rule.methods:
            return rule, dict(zip(names, values))
    return None


def _walk(node: _Node, segments: list[str], index: int, method: str,
          values: list[str]) -> Route | None:
    """Werkzeug's order: static, then ``<name>``; the first rule for the method wins.
    Static segments are tried first at every segment, so a path under a rule
    the tree cannot read meets that rule's flagged node before any answer
    (only nodes reached by static segments from the root are flagged)."""
    if index == len(segments):
        return _rule_of(node, method, values)
    child = node.static.get(segments[index])
    if child is not None:
        if child.unsure:
            raise _Unsure
        found = _walk(child, segments, index + 1, method, values)
        if found is not None:
            return found
    if node.parameter is not None:
        values.append(segments[index])
        found = _walk(node.parameter, segments, index + 1, method, values)
        values.pop()
        return found
    return None


def _plain_segments(rule: Rule) -> list[str] | None:
    """The rule's segments when each is static text or a plain ``<name>``, else None."""
    if rule.defaults or rule.host or rule.subdomain or rule.websocket or rule.redirect_to \
            or rule.build_only or not rule.rule.startswith("/"):
        return None
    segments = rule.rule.split("/")[1:]
    for segment in segments:
        if not segment:
            return None
        if ("<" in segment or ">" in segment) and _PLAIN_PARAMETER.match(segment) is None:
            return None
    return segments


def _static_prefix(text: str) -> list[str]:
    """The static segments a rule's path starts with."""
    prefix = []
    for segment in text.split("/")[1:]:
        if "<" in segment:
            break
        prefix.append(segment)
    return prefix
