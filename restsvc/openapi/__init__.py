"""OpenAPI 3.1 documents of the service: the generic one and the project's
detailed one, each generated once and kept as rendered bytes per mount point."""
import json
import threading

import yaml

from .document import Route, security_schemes

__all__ = ("Documents", "Route")

GENERIC, DETAILED = "generic", "detailed"
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Documents:
    """``render(kind, root_path, as_yaml)``: the document's bytes. The trees are
    built on first use; the bytes are kept per mount point (``root_path``,
    the WSGI SCRIPT_NAME), which sets ``servers`` and the token URL."""

    MAX_RENDERED = 32

    def __init__(self, builder):
        self._builder = builder
        self._trees = {}
        self._rendered = {}
        self._lock = threading.Lock()

    def tree(self, kind):
        tree = self._trees.get(kind)
        if tree is None:
            with self._lock:
                tree = self._trees.get(kind)
                if tree is None:
                    build = self._builder.generic if kind == GENERIC else self._builder.detailed
                    tree = self._trees[kind] = build()
        return tree

    def document(self, kind, root_path=""):
        """The tree as served under ``root_path`` (a shallow copy; do not modify)."""
        tree = self.tree(kind)
        components = {**tree["components"], "securitySchemes": security_schemes(root_path)}
        return {**tree, "servers": [{"url": root_path or "/"}], "components": components}

    def render(self, kind, root_path="", as_yaml=False):
        key = (kind, root_path, as_yaml)
        data = self._rendered.get(key)
        if data is None:
            document = self.document(kind, root_path)
            if as_yaml:
                data = yaml.dump(document, Dumper=_Dumper, sort_keys=False,
                                 allow_unicode=True).encode("utf-8")
            else:
                data = json.dumps(document, ensure_ascii=False,
                                  separators=(",", ":")).encode("utf-8")
            if len(self._rendered) >= self.MAX_RENDERED:
                self._rendered.clear()
            self._rendered[key] = data
        return data
