"""The request as handlers see it: Werkzeug's, with its attributes worked out
when first asked for (most requests need only a few of them) and a query
string parsed in fewer steps."""
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload
from urllib.parse import unquote

from werkzeug.datastructures import EnvironHeaders, Headers, ImmutableMultiDict
from werkzeug.wrappers import Request as WerkzeugRequest

from .data.memo import Memo

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

    from .security.gate import Principal

_T = TypeVar("_T")


class _Parameters(ImmutableMultiDict[str, str]):
    """Werkzeug's ``MultiDict.get`` builds and catches an HTTP exception for
    every absent key; handlers ask for many optional parameters per request."""

    # Werkzeug's overloads (TypeConversionDict.get), which add a ``type``
    # argument that dict.get does not have: Werkzeug ignores the same error.
    @overload  # type: ignore[override]
    def get(self, key: str) -> str | None: ...
    @overload
    def get(self, key: str, default: str) -> str: ...
    @overload
    def get(self, key: str, default: _T) -> str | _T: ...
    @overload
    def get(self, key: str, *, type: Callable[[str], _T]) -> _T | None: ...
    @overload
    def get(self, key: str, default: _T, type: Callable[[str], _T]) -> _T: ...

    def get(self, key: str, default: object = None,
            type: Callable[[str], object] | None = None) -> object:
        if key not in self:
            return default
        if type is None:
            return super().get(key, default)
        return super().get(key, default, type)


_NO_PARAMETERS = _Parameters()


class _lazy(Generic[_T]):
    """An attribute worked out at its first reading, then a plain attribute of
    the instance (a non-data descriptor; Werkzeug's ``cached_property`` is a
    data descriptor, so every reading calls it)."""

    def __init__(self, function: Callable[[Any], _T]) -> None:
        self.function, self.name = function, function.__name__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> "_lazy[_T]": ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...

    def __get__(self, instance: object, owner: type | None = None) -> "_T | _lazy[_T]":
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value


class Request(WerkzeugRequest):
    """Werkzeug's request, its attributes but the method and the path read
    from the environ when first asked for (then a plain attribute): Werkzeug's
    constructor decodes the root path and the server address and wraps the
    headers for every request, and most requests need only a few of them."""
    parameter_storage_class = _Parameters
    body_limit: int | None = None       # bytes, once limit_body has capped the body
    # Set by the app while answering, read by logs and metrics: the matched
    # rule's template, the caller, the error code of an error answer.
    route: str | None = None
    principal: "Principal | None" = None
    error: str | None = None

    def __init__(self, environ: "WSGIEnvironment", populate_request: bool = False,
                 shallow: bool = False) -> None:
        # No super().__init__() (see the class docstring); never stored in the
        # environ (Werkzeug's default): that would make a reference cycle per
        # request, left for the garbage collector. The method and the path
        # every request needs; the rest is worked out when asked for.
        self.environ = environ
        self.shallow = shallow
        self.method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO") or ""
        self.path = path if path[:1] == "/" and path[1:2] != "/" and path.isascii() \
            else "/" + _decoded(path).lstrip("/")

    @_lazy
    def root_path(self) -> str:
        script_name: str = self.environ.get("SCRIPT_NAME") or ""
        return _decoded(script_name).rstrip("/")

    @_lazy
    def scheme(self) -> str:
        scheme: str = self.environ.get("wsgi.url_scheme", "http")
        return scheme

    @_lazy
    def server(self) -> tuple[str, int | None] | None:
        name = self.environ.get("SERVER_NAME")
        if name is None:
            return None
        try:
            return name, int(self.environ["SERVER_PORT"])
        except (KeyError, TypeError, ValueError):
            return name, None       # a unix socket

    @_lazy
    def query_string(self) -> bytes:
        query: str = self.environ.get("QUERY_STRING", "")
        return query.encode("latin1")

    @_lazy
    def headers(self) -> Headers:
        return EnvironHeaders(self.environ)

    @_lazy
    def remote_addr(self) -> str | None:
        address: str | None = self.environ.get("REMOTE_ADDR")
        return address

    @_lazy
    def args(self) -> _Parameters:
        """What Werkzeug's ``args`` gives (``parse_qsl`` with blank values kept,
        bytes that are not UTF-8 left percent-encoded), parsed in fewer steps;
        an empty query string is not parsed into a new dict."""
        query = self.environ.get("QUERY_STRING")
        if not query:
            return _NO_PARAMETERS
        return _Parameters(form_pairs(query.encode("latin-1").decode(), remembered=True))


def _decoded(text: str) -> str:
    """A WSGI string (UTF-8 bytes as Latin-1 characters) -> text, as Werkzeug decodes it."""
    return text if text.isascii() else text.encode("latin1").decode(errors="replace")


def form_pairs(text: str, remembered: bool = False) -> list[tuple[str, str]]:
    """``application/x-www-form-urlencoded`` text -> (name, value) pairs.
    ``remembered`` (a query string, which never holds a secret): long
    encoded values are decoded once and kept (``_DECODED``)."""
    unquote_value = _remembered if remembered else _unquote
    pairs: list[tuple[str, str]] = []
    for field in text.split("&"):
        if field:
            name, _, value = field.partition("=")
            pairs.append((_unquote(name), unquote_value(value)))
    return pairs


def _unquote(text: str) -> str:
    if "+" in text:
        text = text.replace("+", " ")
    return unquote(text, errors="werkzeug.url_quote") if "%" in text else text


def _remembered(text: str) -> str:
    """A search's filter comes back as each page of its results is asked
    for: a long value is decoded once (decoding costs about 5 us)."""
    if len(text) < 64 or "%" not in text:
        return _unquote(text)
    found = _DECODED.get(text)
    if found is None:
        found = _DECODED.put(text, _unquote(text))
    return found


_DECODED: Memo[str] = Memo("decoded query values", 256)
