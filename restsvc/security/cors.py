"""CORS for browser clients, decided once per request in ``RestApp``.

Built only when ``svc.cors.allowed-origins`` names something, so a service
without CORS pays nothing. Framework-free: takes the request's method and
headers, returns the headers to add. A preflight (OPTIONS with ``Origin`` and
``Access-Control-Request-Method``) is answered before the gate, without a
token, on every path (``/oauth2/**``, ``/rest/**``, custom endpoints). An
actual request from an origin that is not allowed is served without CORS
headers (the browser then hides the response), not refused: a same-origin
POST carries an ``Origin`` too.
"""

from typing import Protocol, overload

from ..settings import Settings

PREFLIGHT_VARY = ("Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers")


class RequestHeaders(Protocol):
    """A request's headers as the web layer holds them (read only)."""

    @overload
    def get(self, key: str, /) -> str | None: ...

    @overload
    def get(self, key: str, default: str, /) -> str: ...

    def __contains__(self, key: str, /) -> bool: ...


def _names(header: str | None) -> list[str]:
    return [name.strip() for name in (header or "").split(",") if name.strip()]


class Cors:
    def __init__(self, settings: Settings) -> None:
        self.any_origin = "*" in settings.cors_allowed_origins
        self.origins = frozenset(settings.cors_allowed_origins)
        methods = tuple(m.upper() for m in settings.cors_allowed_methods)
        self.methods: tuple[str, ...] | None = None if "*" in methods else methods
        headers = settings.cors_allowed_headers
        self.headers: frozenset[str] | None = None if "*" in headers else frozenset(
            h.lower() for h in headers)
        self.exposed = ", ".join(settings.cors_exposed_headers)
        self.credentials = settings.cors_allow_credentials
        self.max_age = str(settings.cors_max_age)

    @staticmethod
    def is_preflight(method: str, headers: RequestHeaders) -> bool:
        return (method == "OPTIONS" and "Origin" in headers
                and "Access-Control-Request-Method" in headers)

    def _allowed_origin(self, origin: str | None) -> str | None:
        if not origin:
            return None
        if self.any_origin:          # never with credentials (settings refuse it)
            return "*"
        return origin if origin in self.origins else None

    def _common(self, origin: str) -> dict[str, str]:
        headers = {"Access-Control-Allow-Origin": origin}
        if self.credentials:
            headers["Access-Control-Allow-Credentials"] = "true"
        return headers

    def preflight(self, headers: RequestHeaders) -> dict[str, str] | None:
        """The headers of a 204 answer, or None when the origin, the method or a
        header is not allowed (the caller answers 403)."""
        origin = self._allowed_origin(headers.get("Origin"))
        method = headers.get("Access-Control-Request-Method", "").strip().upper()
        requested = _names(headers.get("Access-Control-Request-Headers"))
        if origin is None or not method:
            return None
        if self.methods is not None and method not in self.methods:
            return None
        if self.headers is not None and any(h.lower() not in self.headers for h in requested):
            return None
        answer = self._common(origin)
        answer["Access-Control-Allow-Methods"] = ", ".join(self.methods or (method,))
        if requested:
            answer["Access-Control-Allow-Headers"] = ", ".join(requested)
        answer["Access-Control-Max-Age"] = self.max_age
        return answer

    def actual(self, headers: RequestHeaders) -> dict[str, str]:
        """Headers for the response to an actual (non-preflight) request."""
        origin = self._allowed_origin(headers.get("Origin"))
        if origin is None:
            return {}
        answer = self._common(origin)
        if self.exposed:
            answer["Access-Control-Expose-Headers"] = self.exposed
        return answer
