"""OpenAPI 3.1 documents of the service: the generic one and the project's
detailed one, each generated once and kept as rendered bytes per mount point."""
import json
import threading

import yaml

from ..jsonio import JsonObject
from ..security.roles import Permissions
from .document import DocumentBuilder, Route, security_schemes
from .public import public_document

__all__ = ("Documents", "Route")

# PUBLIC: what the docs page shows before one signs in (public.py).
GENERIC, DETAILED, PUBLIC = "generic", "detailed", "public"
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# Who a detailed document is written for: resource and row-level role codes, token scope.
_Roles = tuple[tuple[str, ...], tuple[str, ...], str | None]


class Documents:
    """``render(kind, root_path, as_yaml, permissions)``: the document's bytes.

    The generic document is the same for everyone; the detailed one shows what
    the caller's permissions allow, so it is built once per combination of
    roles (resource and row-level role codes) and token scopes. Trees are built on first use,
    bytes kept per tree, mount point (``root_path``, the WSGI SCRIPT_NAME,
    which sets ``servers`` and the token URL) and format. Both caches are
    bounded: past their size they start again, so odd role combinations
    cannot grow them."""

    MAX_TREES = 32
    MAX_RENDERED = 64

    def __init__(self, builder: DocumentBuilder):
        self._builder = builder
        self._trees: dict[tuple[str, _Roles | None], JsonObject] = {}
        self._rendered: dict[tuple[str, _Roles | None, str, bool], bytes] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _roles(kind: str, permissions: Permissions | None) -> _Roles | None:
        if kind != DETAILED or permissions is None:
            return None
        return permissions.resource_roles, permissions.row_level_roles, permissions.scope

    def tree(self, kind: str, permissions: Permissions | None = None) -> JsonObject:
        key = (kind, self._roles(kind, permissions))
        tree = self._trees.get(key)
        if tree is None:
            with self._lock:
                tree = self._trees.get(key)
                if tree is None:
                    if kind == GENERIC:
                        tree = self._builder.generic()
                    elif kind == PUBLIC:
                        tree = public_document(self._builder.detailed(), self._builder.grants)
                    else:
                        tree = self._builder.detailed(permissions)
                    if len(self._trees) >= self.MAX_TREES:
                        self._trees.clear()
                    self._trees[key] = tree
        return tree

    def document(self, kind: str, root_path: str = "",
                 permissions: Permissions | None = None) -> JsonObject:
        """The tree as served under ``root_path`` (a shallow copy; do not modify);
        ``servers`` from svc.rest.docs.servers, else the mount point."""
        tree = self.tree(kind, permissions)
        token_path = self._builder.settings.paths.token
        components = {**tree["components"],
                      "securitySchemes": security_schemes(root_path, token_path,
                                                          self._builder.grants)}
        servers = self._builder.settings.api_info.servers or (root_path or "/",)
        return {**tree, "servers": [{"url": url} for url in servers], "components": components}

    def render(self, kind: str, root_path: str = "", as_yaml: bool = False,
               permissions: Permissions | None = None) -> bytes:
        key = (kind, self._roles(kind, permissions), root_path, as_yaml)
        data = self._rendered.get(key)
        if data is None:
            document = self.document(kind, root_path, permissions)
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
