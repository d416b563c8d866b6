"""Matching a request's path and method to a rule of the route table.

Werkzeug's matcher costs several microseconds a path; the app keeps recent
answers, but a service whose URLs carry ids sees few paths twice. Most rules
are whole segments, each static text or a plain ``<name>`` (Werkzeug's
default converter: any non-empty segment), and those this router matches in
a tree of segments, as Werkzeug does: static before ``<name>`` at every
segment, backtracking when the method does not match, rules in table order.
Whatever it is not sure of -- a path with an empty segment (trailing or
doubled slashes), one under a rule it cannot read (another converter, part
of a segment, defaults, hosts), no rule for the method (404 or 405) -- goes
to Werkzeug, which decides as before.
"""
import re

_PLAIN_PARAMETER = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>\Z")


class _Node:
    __slots__ = ("static", "parameter", "rules")

    def __init__(self):
        self.static = {}         # segment text -> _Node
        self.parameter = None    # the _Node after a <name> segment
        self.rules = []          # (rule, its argument names in order) ending here, in table order


class Router:
    def __init__(self, url_map):
        self._adapter = url_map.bind("restsvc")
        self._root = _Node()
        self._unsure = []        # leading static segments of rules left to Werkzeug
        for rule in url_map.iter_rules():
            segments = _plain_segments(rule)
            if segments is None:
                self._unsure.append(_static_prefix(rule.rule))
            else:
                self._add(rule, segments)

    def _add(self, rule, segments):
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

    def match(self, path, method):
        """(rule, arguments), or raise what Werkzeug's matcher raises (404, 405)."""
        segments = path.split("/")[1:]
        if "" not in segments and not any(segments[:len(prefix)] == prefix
                                          for prefix in self._unsure):
            found = _walk(self._root, segments, 0, method, [])
            if found is not None:
                return found
        return self._adapter.match(path, method, return_rule=True)


def _walk(node, segments, index, method, values):
    """Werkzeug's order: static, then ``<name>``; the first rule for the method wins."""
    if index == len(segments):
        for rule, names in node.rules:
            if rule.methods is None or method in rule.methods:
                return rule, dict(zip(names, values))
        return None
    child = node.static.get(segments[index])
    if child is not None:
        found = _walk(child, segments, index + 1, method, values)
        if found is not None:
            return found
    if node.parameter is not None:
        values.append(segments[index])
        found = _walk(node.parameter, segments, index + 1, method, values)
        values.pop()
        return found
    return None


def _plain_segments(rule):
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


def _static_prefix(text):
    """The static segments a rule's path starts with."""
    prefix = []
    for segment in text.split("/")[1:]:
        if "<" in segment:
            break
        prefix.append(segment)
    return prefix
