"""Small HTTP helpers shared by the handlers: JSON in and out, typed query
values, Content-Disposition, handlers that stream their request body."""
import re
import unicodedata
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus

from werkzeug.datastructures import EnvironHeaders, ImmutableMultiDict
from werkzeug.wrappers import Request as WerkzeugRequest
from werkzeug.wrappers import Response

from . import db
from .data.access import Access, access_for
from .data.bound import DataAccess
from .bodies import form_pairs
from .errors import BadRequest, Text, localized_body
from .jsonio import dumps_bytes
from .responses import CompleteResponse
from .responses import add_header as add_header, body_size as body_size     # handlers' names for them
from .model.datatypes import DATATYPES
from .services.declare import Caller

if TYPE_CHECKING:
    from .parts import AppParts
    from .security.gate import Principal
    from .security.roles import Permissions

LONG = DATATYPES["long"]

JSON_TYPE = "application/json;charset=UTF-8"
TEXT_TYPE = "text/plain;charset=UTF-8"


class _Parameters(ImmutableMultiDict):
    """Werkzeug's ``MultiDict.get`` builds and catches an HTTP exception for
    every absent key; handlers ask for many optional parameters per request."""

    def get(self, key, default=None, type=None):
        if key not in self:
            return default
        return super().get(key, default, type)


_NO_PARAMETERS = _Parameters()


class _lazy:
    """An attribute worked out at its first reading, then a plain attribute of
    the instance (a non-data descriptor; Werkzeug's ``cached_property`` is a
    data descriptor, so every reading calls it)."""

    def __init__(self, function):
        self.function, self.name = function, function.__name__

    def __get__(self, instance, owner=None):
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
    body_limit = None       # bytes, once limit_body has capped the body
    # Set by the app while answering, read by logs and metrics: the matched
    # rule's template, the caller, the error code of an error answer.
    route: str | None = None
    principal: "Principal | None" = None
    error: str | None = None

    def __init__(self, environ, populate_request=False, shallow=False):
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
    def root_path(self):
        return _decoded(self.environ.get("SCRIPT_NAME") or "").rstrip("/")

    @_lazy
    def scheme(self):
        return self.environ.get("wsgi.url_scheme", "http")

    @_lazy
    def server(self):
        name = self.environ.get("SERVER_NAME")
        if name is None:
            return None
        try:
            return name, int(self.environ.get("SERVER_PORT"))
        except (TypeError, ValueError):
            return name, None       # a unix socket

    @_lazy
    def query_string(self):
        return self.environ.get("QUERY_STRING", "").encode("latin1")

    @_lazy
    def headers(self):
        return EnvironHeaders(self.environ)

    @_lazy
    def remote_addr(self):
        return self.environ.get("REMOTE_ADDR")

    @_lazy
    def args(self):
        """What Werkzeug's ``args`` gives (``parse_qsl`` with blank values kept,
        bytes that are not UTF-8 left percent-encoded), parsed in fewer steps;
        an empty query string is not parsed into a new dict."""
        query = self.environ.get("QUERY_STRING")
        if not query:
            return _NO_PARAMETERS
        return _Parameters(form_pairs(query.encode("latin-1").decode()))


def _decoded(text):
    """A WSGI string (UTF-8 bytes as Latin-1 characters) -> text, as Werkzeug decodes it."""
    return text if text.isascii() else text.encode("latin1").decode(errors="replace")


def location_url(request, public_url=""):
    """The request's URL without the query, for a ``Location`` header:
    path-absolute (mount point and path), or under ``svc.public-url`` when it
    is set. Never built from ``Host`` or forwarded headers, which the client
    (or anyone before the proxy) writes."""
    if public_url:
        return public_url + _quoted(request.path, _PATH_SAFE, _PATH_PLAIN)
    return _quoted(request.root_path + request.path, _PATH_SAFE, _PATH_PLAIN)


_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_PATH_PLAIN = re.compile(r"[A-Za-z0-9/:@!$&'()*+,;=\-._~]*\Z")
_QUERY_PLAIN = re.compile(r"[A-Za-z0-9_.\-~]*\Z")      # what quote_plus keeps as it is


def _quoted(text, safe, plain):
    """``quote(text, safe)``; text that has nothing to quote is taken as it is."""
    return text if plain.match(text) else quote(text, safe=safe)


def _query(pairs):
    """``urlencode(pairs)``, names and values that need no quoting taken as they are."""
    return "&".join(f"{name if _QUERY_PLAIN.match(name) else quote_plus(name)}="
                    f"{value if _QUERY_PLAIN.match(value) else quote_plus(value)}"
                    for name, value in pairs)


def base_url(request, public_url=""):
    """The service's absolute base URL (an OAuth issuer): ``svc.public-url``
    when set, else the scheme and host of the request (after svc.trusted-proxies)
    and the mount point."""
    return public_url or request.root_url.rstrip("/")


def json_response(data, status=200, headers=None):
    return CompleteResponse(dumps_bytes(data), JSON_TYPE, status, headers)


def text_response(text, status=200, headers=None, content_type=TEXT_TYPE):
    """``text/plain;charset=UTF-8``; a lone surrogate is written as "?"."""
    return CompleteResponse(text.encode("utf-8", "replace"), content_type, status, headers)


def empty_response(status=200, headers=None):
    return Response(status=status, headers=headers)


def list_response(rows, total=None, next_url=None):
    """An entity list; ``X-Total-Count`` when a total was asked for
    (``returnCount``), ``Link: <...>; rel="next"`` when a next page follows."""
    headers = {}
    if total is not None:
        headers["X-Total-Count"] = str(total)
    if next_url is not None:
        headers["Link"] = f'<{next_url}>; rel="next"'
    return json_response(rows, headers=headers or None)


def next_page_url(request, public_url, cursor):
    """The request's URL with ``after`` set to the next page's cursor (None:
    no next page); an ``offset`` is left out (the cursor continues after it)."""
    if cursor is None:
        return None
    query = [(name, value) for name, value in request.args.items(multi=True)
             if name not in ("after", "offset")]
    query.append(("after", cursor))
    return f"{location_url(request, public_url)}?{_query(query)}"


# What a JSON body may cost beyond its bytes: every value, counted (cheaply,
# over-counting separators inside strings) as a "," "[" or "{", takes up to
# 116 bytes once parsed (a Decimal; an empty list 34), so one value per 16
def query_int(request, name, default=None, minimum=0):
    value = request.args.get(name)
    if value is None or value == "":
        return default
    return whole_number(name, value, minimum)


def whole_number(name, value, minimum=0):
    """A count such as ``limit`` or ``offset`` (text or JSON): 64-bit, at least ``minimum``."""
    if isinstance(value, str) and len(value) < 19 and value.isascii() and value.isdigit():
        number = int(value)       # the usual case, without the general number parser
        if number >= minimum:
            return number
    try:
        number = LONG.from_json(value)
    except (ValueError, TypeError):
        raise BadRequest("Invalid parameter value", Text(
            "invalidParameterValueOf", "Invalid value of parameter {name}: {value}",
            name=name, value=str(value)[:40])) from None
    if number < minimum:
        raise BadRequest("Invalid parameter value", Text(
            "parameterMinimum", "Parameter {name} must be at least {minimum}", name=name,
            minimum=minimum))
    return number


def query_bool(request, name, default=False):
    value = request.args.get(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise BadRequest("Invalid parameter value", Text(
            "invalidParameterValueOf", "Invalid value of parameter {name}: {value}",
            name=name, value=value))
    return lowered == "true"


def streams_body(handler):
    """Mark a handler that reads its request body as a stream and enforces its
    own size limit: the app then does not cap the body at svc.rest.max-request-size."""
    handler.streams_body = True
    return handler


def content_disposition(disposition, file_name):
    """RFC 6266: an ASCII ``filename`` for old clients and the exact name as
    RFC 5987 ``filename*``. The fallback keeps letters without their accents;
    any other non-ASCII or control character, quote or backslash becomes ``_``,
    so no name can break the header."""
    letters = (c for c in unicodedata.normalize("NFKD", file_name) if not unicodedata.combining(c))
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in letters)
    return (f'{disposition}; filename="{fallback}"; '
            f"filename*=UTF-8''{quote(file_name, safe='')}")


def releasing(chunks, database):
    """A streamed body is read from the database while the response is sent,
    after the request itself has ended: give the connection back when it
    ends, also when the client goes away."""
    try:
        yield from chunks
    finally:
        chunks.close()
        db.release(database)


# Never kept by a cache: OAuth answers (RFC 6749 5.1, 5.2) and every error.
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def error_response(error, lookup=None):
    """The error's answer; ``lookup`` (bundle key -> template or None) gives its
    messages in the caller's language (errors.Text), English without."""
    body = error.body() if lookup is None else localized_body(error, lookup)
    return json_response(body, status=error.status, headers={**NO_STORE, **error.headers})


def caller_locale(request, principal, available):
    """``Accept-Language`` when it names an available language, else the
    caller's own (its session's), else the default."""
    requested = request.accept_languages.best_match(available)
    own = getattr(principal, "locale", None)
    return requested or (own if own in available else None) or available[0]


class Context:
    """What a handler gets, built-in or custom endpoint: ``request`` (a Werkzeug
    Request), ``caller``, ``data`` (the data manager bound to the caller),
    ``permissions``, ``locale`` and ``app``."""

    __slots__ = ("app", "request", "principal", "_locale", "_access")

    def __init__(self, app: "AppParts", request: Request, principal: "Principal") -> None:
        self.app = app
        self.request = request
        self.principal = principal
        self._locale: str | None = None
        self._access: Access | None = None

    @property
    def permissions(self) -> "Permissions":
        return self.principal.permissions

    @property
    def caller(self) -> Caller:
        """Who calls, as application code sees it (restsvc.Caller)."""
        permissions = self.principal.permissions
        return Caller(self.principal.username,
                      permissions.resource_roles + permissions.row_level_roles,
                      self.locale, self.principal.is_user, self.principal.client_id)

    @property
    def data(self) -> DataAccess:
        """The data manager bound to the caller (restsvc.DataAccess): entity,
        attribute and row-level policies apply to every load and save."""
        return DataAccess(self.app.data, self.access)

    @property
    def access(self) -> Access:
        """The caller as the data layer sees it."""
        if self._access is None:
            self._access = access_for(self.app, self.principal)
        return self._access

    @property
    def locale(self) -> str:
        """``Accept-Language`` when it names an available language, else the caller's."""
        if self._locale is None:
            self._locale = caller_locale(self.request, self.principal,
                                         self.app.settings.available_locales)
        return self._locale
