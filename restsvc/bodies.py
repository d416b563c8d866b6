"""Request bodies read whole: JSON and form bodies, bounded by cost before
they are parsed (size, announced or not; values per byte; form fields), and
a server's framing errors answered 400."""
from collections.abc import Callable
from typing import Protocol

from werkzeug.exceptions import RequestEntityTooLarge

from .errors import BadRequest, MalformedBody, PayloadTooLarge
from .jsonio import JsonValue, loads
from .numbers import NumberOutOfBounds
from .request import Request, form_pairs


def limit_body(request: Request, limit: int) -> None:
    """Cap a body that is read whole (JSON, forms) at ``limit`` bytes, alike
    whether its length is announced or not. Werkzeug refuses a Content-Length
    above the limit with 413, but ends a chunked body at the limit without a
    word, and its parsers would then see a truncated body."""
    environ = request.environ
    request.body_limit = limit
    if environ.get("CONTENT_LENGTH"):
        request.max_content_length = limit
        environ["wsgi.input"] = _BodyInput(environ["wsgi.input"], None)
    elif "wsgi.input_terminated" in environ:
        environ["wsgi.input"] = _BodyInput(environ["wsgi.input"], limit)


class _Stream(Protocol):
    """A WSGI server's input stream (``wsgi.input``)."""

    def read(self, size: int | None = ..., /) -> bytes: ...
    def readline(self, size: int | None = ..., /) -> bytes: ...


class _BodyInput:
    """The server's input stream for a body read whole. Whatever the server
    raises while reading it (gunicorn's InvalidChunkSize, a socket error) means
    the client's body cannot be read: 400, not a server error. Without a
    Content-Length, more than ``limit`` bytes are a 413 (Werkzeug's answer to
    a Content-Length above the limit)."""

    def __init__(self, stream: _Stream, limit: int | None) -> None:
        self._stream = stream
        self._left = limit

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            parts: list[bytes] = []
            while True:
                part = self.read(1 << 16)
                if not part:
                    return b"".join(parts)
                parts.append(part)
        if self._left is not None:
            size = min(size, self._left + 1)
        return self._count(self._stream.read, size)

    def readline(self, size: int | None = -1) -> bytes:
        if self._left is not None and (size is None or size < 0 or size > self._left + 1):
            size = self._left + 1
        return self._count(self._stream.readline, size)

    def _count(self, read: Callable[[int | None], bytes], size: int | None) -> bytes:
        try:
            data = read(size)
        except Exception:
            # Framing errors are server-specific classes; all of them mean
            # the same to the client.
            raise MalformedBody() from None
        if self._left is not None:
            self._left -= len(data)
            if self._left < 0:
                raise RequestEntityTooLarge()
        return data


# bytes keeps a parsed body within about 7 times its size (10 with the body's
# bytes and text). A small body may hold up to 8,192 values (under 1 MB).
BYTES_PER_JSON_VALUE = 16
MIN_JSON_VALUES = 8192
# Searches, counts, predefined queries, service calls and reports: a filter
# or parameters, far below the limit for writes (svc.rest.max-request-size).
MAX_QUERY_BODY = 1 << 20


_REQUIRED = object()


def read_json_body(request: Request, error: str = "Malformed request JSON data structure",
                   max_bytes: int | None = None, if_empty: JsonValue = _REQUIRED) -> JsonValue:
    """The request body as JSON; any content type is accepted, as the reference
    does. ``max_bytes`` caps it below svc.rest.max-request-size; either way a
    body of more values than its size allows is refused before it is parsed.
    ``if_empty``: the value of an empty (or blank) body, else it is malformed."""
    raw = _read_body(request, max_bytes)
    if if_empty is not _REQUIRED and not raw.strip():
        return if_empty
    values = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if values > MIN_JSON_VALUES and values > len(raw) // BYTES_PER_JSON_VALUE:
        raise PayloadTooLarge("Request body too large",
                              f"A JSON body may hold at most one value per "
                              f"{BYTES_PER_JSON_VALUE} bytes, or {MIN_JSON_VALUES} values")
    try:
        return loads(raw.decode("utf-8"))
    except NumberOutOfBounds as exc:
        raise BadRequest(error, str(exc)) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest(error, "") from None


def _read_body(request: Request, max_bytes: int | None) -> bytes:
    """The whole body; above ``max_bytes`` (announced or not) 413 before reading it."""
    if max_bytes is None:
        return request.get_data(cache=False)
    max_bytes = min(max_bytes, request.body_limit or max_bytes)     # svc.rest.max-request-size
    too_large = PayloadTooLarge("Request body too large",
                                f"The body of this request may have at most {max_bytes} bytes")
    if request.content_length is not None and request.content_length > max_bytes:
        raise too_large
    limit_body(request, max_bytes)
    try:
        return request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise too_large from None


def read_form_body(request: Request, max_bytes: int, max_fields: int) -> list[tuple[str, str]]:
    """A form body as (name, value) pairs, refused (PayloadTooLarge) before it is
    parsed when it has more than ``max_bytes`` bytes, announced or not, or more
    than ``max_fields`` fields: a body of empty pairs (``a=&a=&...``) costs a
    parser some 50 bytes of memory per byte."""
    raw = _read_body(request, max_bytes)
    if raw.count(b"&") >= max_fields:
        raise PayloadTooLarge("Too many form fields",
                              f"A form body may have at most {max_fields} fields")
    try:
        return form_pairs(raw.decode())
    except UnicodeDecodeError:
        raise BadRequest("Malformed form body", "The form body is not UTF-8") from None
