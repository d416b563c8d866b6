"""Where the built-in endpoints live (reference 1.1): the REST API's base
path and the segments under it (``svc.rest.base-path``, ``svc.rest.*-path``)
and the authorization server's endpoints (``svc.authserver.base-path``).

The route tables, handlers and OpenAPI operation tables are written with the
default paths (``/rest/entities/...``, ``/oauth2/token``); ``Paths.mount``
moves a default path to the configured one, ``Paths.unmount`` back. The
version (``/version``), the Reports API (``/reports``), the change feed
(``/events``), webhooks (``/webhooks``) and API keys (``/api-keys``) follow
the base path; the RFC 8414 metadata stays at
``/.well-known/oauth-authorization-server``.
"""
from dataclasses import dataclass, fields
from functools import cached_property

REST_BASE = "/rest"
AUTH_BASE = "/oauth2"
# setting -> (attribute, default); each value starts with / and does not end with /
REST_SEGMENTS = {
    "svc.rest.entities-path": ("entities", "/entities"),
    "svc.rest.queries-path": ("queries", "/queries"),
    "svc.rest.services-path": ("services", "/services"),
    "svc.rest.files-path": ("files", "/files"),
    "svc.rest.metadata-path": ("metadata", "/metadata"),
    "svc.rest.messages-path": ("messages", "/messages"),
    "svc.rest.permissions-path": ("permissions", "/permissions"),
    "svc.rest.user-info-path": ("user_info", "/userInfo"),
    "svc.rest.user-session-path": ("user_session", "/user-session"),
    "svc.rest.capabilities-path": ("capabilities", "/capabilities"),
    "svc.rest.docs-path": ("docs", "/docs"),
}
# Under the base path, not configurable (as in the reference).
FIXED_SEGMENTS = {"version": "/version", "reports": "/reports", "events": "/events",
                  "webhooks": "/webhooks", "batch": "/batch", "api_keys": "/api-keys"}
SETTINGS = {"svc.rest.base-path": ("base", REST_BASE),
            **REST_SEGMENTS, "svc.authserver.base-path": ("auth", AUTH_BASE)}


@dataclass(frozen=True)
class Paths:
    base: str = REST_BASE
    entities: str = "/entities"
    queries: str = "/queries"
    services: str = "/services"
    files: str = "/files"
    metadata: str = "/metadata"
    messages: str = "/messages"
    permissions: str = "/permissions"
    user_info: str = "/userInfo"
    user_session: str = "/user-session"
    capabilities: str = "/capabilities"
    docs: str = "/docs"
    auth: str = AUTH_BASE

    def rest(self, name: str) -> str:
        """The configured path of one part of the REST API: ``rest("docs")`` -> ``/rest/docs``."""
        segment: str = FIXED_SEGMENTS.get(name) or getattr(self, name)
        return self.base + segment

    @property
    def token(self) -> str:
        return self.auth + "/token"

    @property
    def is_default(self) -> bool:
        return self == DEFAULT_PATHS

    @cached_property
    def _moves(self) -> list[tuple[str, str]]:
        """(default prefix, configured prefix), the longest default first."""
        moves = [(REST_BASE + default, self.rest(attr)) for attr, default in
                 [*((a, d) for a, d in REST_SEGMENTS.values()), *FIXED_SEGMENTS.items()]]
        moves.sort(key=lambda move: -len(move[0]))
        return [*moves, (REST_BASE, self.base), (AUTH_BASE, self.auth)]

    def mount(self, path: str) -> str:
        """A default path (a route's rule text) at its configured place."""
        return _move(path, self._moves)

    def unmount(self, path: str) -> str:
        """A configured path back at its default place (for the tables keyed by it)."""
        return _move(path, sorted(((new, old) for old, new in self._moves),
                                  key=lambda move: -len(move[0])))

    def check(self) -> str | None:
        """Refuse paths that would hide each other: the REST segments distinct
        and none inside another, the two bases apart. Returns a message or None."""
        segments: dict[str, str] = {attr: getattr(self, attr) for attr, _ in REST_SEGMENTS.values()}
        segments.update(FIXED_SEGMENTS)
        taken = list(segments.items())
        for name, path in taken:
            for other, other_path in taken:
                if other != name and _within(other_path, path):
                    return f"{_setting(other)}: {other_path} is inside {_setting(name)} ({path})"
        if _within(self.auth, self.base) or _within(self.base, self.auth):
            return (f"svc.authserver.base-path: {self.auth} and svc.rest.base-path "
                    f"({self.base}) must not contain each other")
        return None


DEFAULT_PATHS = Paths()


def _within(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _move(path: str, moves: list[tuple[str, str]]) -> str:
    for old, new in moves:
        if _within(path, old):
            return new + path[len(old):]
    return path


def _setting(attr: str) -> str:
    if attr in FIXED_SEGMENTS:
        return f"the fixed {FIXED_SEGMENTS[attr]}"
    return next(key for key, (name, _) in SETTINGS.items() if name == attr)


def paths_from(values: dict[str, str]) -> Paths:
    """Paths from {attribute: value}; the attributes not given keep their defaults."""
    known = {f.name for f in fields(Paths)}
    return Paths(**{name: value for name, value in values.items() if name in known})
