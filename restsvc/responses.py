"""Complete answers: a JSON or text body held whole, its size known without
reading it (web.py makes them; observability counts their bytes)."""
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from werkzeug.datastructures import Headers
from werkzeug.wrappers import Response
from werkzeug.wsgi import ClosingIterator

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

HeaderValues = Mapping[str, object] | Iterable[tuple[str, object]]


class CompleteResponse(Response):
    """A complete JSON or text body. Werkzeug's general answer path (Location
    rewriting, conditional and range handling, iterator wrapping) and its
    general constructor (mimetype, charset, body type checks) cost more than
    the rest of a small request and apply to none of these, so they are skipped;
    the header list (all set by restsvc itself) becomes Werkzeug ``Headers``
    only when something asks for ``headers`` (CORS, Vary)."""

    direct_passthrough = False

    def __init__(self, body: bytes, content_type: str, status: int = 200,
                 headers: HeaderValues | None = None) -> None:
        # No super().__init__(): see the class docstring.
        self._header_list = [(name, str(value)) for name, value in (
            headers.items() if hasattr(headers, "items") else headers)] if headers else []
        self._header_list += ((_CONTENT_TYPE, content_type), (_CONTENT_LENGTH, str(len(body))))
        self._headers: Headers | None = None
        self._status, self._status_code = _status_line(status)
        self.response: list[bytes] = [body]
        self._on_close = []

    @property
    def headers(self) -> Headers:
        if self._headers is None:
            self._headers = Headers(self._header_list)
        return self._headers

    @headers.setter
    def headers(self, headers: Headers) -> None:
        self._headers = headers

    def __call__(self, environ: "WSGIEnvironment",
                 start_response: "StartResponse") -> Iterable[bytes]:
        start_response(self._status, self._header_list if self._headers is None
                       else self._headers.to_wsgi_list())
        body = [] if environ["REQUEST_METHOD"] == "HEAD" else self.response
        if self._on_close:      # call_on_close: run once the server has sent the body
            return ClosingIterator(body, self.close)
        return body


_CONTENT_TYPE, _CONTENT_LENGTH = "Content-Type", "Content-Length"
_STATUS_LINES: dict[int, tuple[str, int]] = {}


def _status_line(code: int) -> tuple[str, int]:
    """(status line, code) as Werkzeug's ``status`` setter makes them, kept per code."""
    line = _STATUS_LINES.get(code)
    if line is None:
        probe = Response(status=code)
        line = _STATUS_LINES[code] = (probe.status, probe.status_code)
    return line


def add_header(response: Response, name: str, value: object) -> None:
    """One more header on any response; a complete one keeps its plain list."""
    if isinstance(response, CompleteResponse) and response._headers is None:
        response._header_list.append((name, str(value)))
    else:
        response.headers.add(name, str(value))


def body_size(response: Response) -> int | None:
    """The body's length when it is known without reading it, else None."""
    if isinstance(response, CompleteResponse):
        return len(response.response[0])
    return response.content_length
