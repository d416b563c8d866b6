"""Small HTTP helpers shared by the handlers: JSON in and out, typed query
values, Content-Disposition, handlers that stream their request body."""
import re
import unicodedata
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import quote, quote_plus

import peewee
from werkzeug.wrappers import Request as WerkzeugRequest
from werkzeug.wrappers import Response

from . import db
from .data.access import Access, access_for
from .data.bound import DataAccess
from .errors import ApiError, BadRequest, Text, localized_body
from .jsonio import JsonValue, dumps_bytes
from .responses import CompleteResponse, HeaderValues
from .responses import add_header as add_header, body_size as body_size     # handlers' names for them
from .model.datatypes import DATATYPES
from .request import Request as Request     # handlers import it from here
from .security.tenants import ACT_FOR_TENANT, TENANT_HEADER_ENVIRON, acting_tenant
from .services.declare import Caller

if TYPE_CHECKING:

    from .parts import AppParts
    from .security.gate import Principal
    from .security.roles import Permissions

LONG = DATATYPES["long"]

JSON_TYPE = "application/json;charset=UTF-8"
TEXT_TYPE = "text/plain;charset=UTF-8"


_F = TypeVar("_F", bound=Callable[..., Any])


def location_url(request: WerkzeugRequest, public_url: str = "") -> str:
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


def _quoted(text: str, safe: str, plain: re.Pattern[str]) -> str:
    """``quote(text, safe)``; text that has nothing to quote is taken as it is."""
    return text if plain.match(text) else quote(text, safe=safe)


def _query(pairs: Iterable[tuple[str, str]]) -> str:
    """``urlencode(pairs)``, names and values that need no quoting taken as they are."""
    return "&".join(f"{name if _QUERY_PLAIN.match(name) else quote_plus(name)}="
                    f"{value if _QUERY_PLAIN.match(value) else quote_plus(value)}"
                    for name, value in pairs)


def base_url(request: WerkzeugRequest, public_url: str = "") -> str:
    """The service's absolute base URL (an OAuth issuer): ``svc.public-url``
    when set, else the scheme and host of the request (after svc.trusted-proxies)
    and the mount point."""
    return public_url or request.root_url.rstrip("/")


def json_response(data: JsonValue, status: int = 200,
                  headers: HeaderValues | None = None) -> Response:
    return CompleteResponse(dumps_bytes(data), JSON_TYPE, status, headers)


def text_response(text: str, status: int = 200, headers: HeaderValues | None = None,
                  content_type: str = TEXT_TYPE) -> Response:
    """``text/plain;charset=UTF-8``; a lone surrogate is written as "?"."""
    return CompleteResponse(text.encode("utf-8", "replace"), content_type, status, headers)


def empty_response(status: int = 200, headers: Mapping[str, str | Iterable[str]]
                   | Iterable[tuple[str, str]] | None = None) -> Response:
    return Response(status=status, headers=headers)


def list_response(rows: JsonValue, total: int | None = None,
                  next_url: str | None = None) -> Response:
    """An entity list; ``X-Total-Count`` when a total was asked for
    (``returnCount``), ``Link: <...>; rel="next"`` when a next page follows."""
    headers: dict[str, str] = {}
    if total is not None:
        headers["X-Total-Count"] = str(total)
    if next_url is not None:
        headers["Link"] = f'<{next_url}>; rel="next"'
    return json_response(rows, headers=headers or None)


def next_page_url(request: Request, public_url: str, cursor: str | None) -> str | None:
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
def query_int(request: Request, name: str, default: int | None = None,
              minimum: int = 0) -> int | None:
    value = request.args.get(name)
    if value is None or value == "":
        return default
    return whole_number(name, value, minimum)


def whole_number(name: str, value: object, minimum: int = 0) -> int:
    """A count such as ``limit`` or ``offset`` (text or JSON): 64-bit, at least ``minimum``."""
    if isinstance(value, str) and len(value) < 19 and value.isascii() and value.isdigit():
        number: int = int(value)       # the usual case, without the general number parser
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


def query_bool(request: Request, name: str, default: bool = False) -> bool:
    value = request.args.get(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise BadRequest("Invalid parameter value", Text(
            "invalidParameterValueOf", "Invalid value of parameter {name}: {value}",
            name=name, value=value))
    return lowered == "true"


def streams_body(handler: _F) -> _F:
    """Mark a handler that reads its request body as a stream and enforces its
    own size limit: the app then does not cap the body at svc.rest.max-request-size."""
    handler.__dict__["streams_body"] = True     # read by the app: getattr(endpoint, "streams_body")
    return handler


def content_disposition(disposition: str, file_name: str) -> str:
    """RFC 6266: an ASCII ``filename`` for old clients and the exact name as
    RFC 5987 ``filename*``. The fallback keeps letters without their accents;
    any other non-ASCII or control character, quote or backslash becomes ``_``,
    so no name can break the header."""
    letters = (c for c in unicodedata.normalize("NFKD", file_name) if not unicodedata.combining(c))
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in letters)
    return (f'{disposition}; filename="{fallback}"; '
            f"filename*=UTF-8''{quote(file_name, safe='')}")


def releasing(chunks: Iterator[bytes], database: peewee.Database) -> Iterator[bytes]:
    """A streamed body is read from the database while the response is sent,
    after the request itself has ended: give the connection back when it
    ends, also when the client goes away. ``chunks``: a generator (closing it
    closes what it reads), declared Iterator by the generator functions."""
    try:
        yield from chunks
    finally:
        cast(Generator[bytes, None, None], chunks).close()
        db.release(database)


# Never kept by a cache: OAuth answers (RFC 6749 5.1, 5.2) and every error.
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def error_response(error: ApiError, lookup: Callable[[str], str | None] | None = None) -> Response:
    """The error's answer; ``lookup`` (bundle key -> template or None) gives its
    messages in the caller's language (errors.Text), English without."""
    body = error.body() if lookup is None else localized_body(error, lookup)
    return json_response(body, status=error.status, headers={**NO_STORE, **error.headers})


def caller_locale(request: WerkzeugRequest, principal: "Principal | None",
                  available: tuple[str, ...]) -> str:
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

    def check_acting_tenant(self) -> None:
        """A signed-in request naming a tenant (``X-Tenant-Id``) it may not act
        for is refused (403, 400) whatever it asks for, not only where it reads rows."""
        if TENANT_HEADER_ENVIRON in self.request.environ \
                and self.principal is not self.app.gate.anonymous_principal:
            self.access     # noqa: B018  (resolving it checks the header)

    @property
    def access(self) -> Access:
        """The caller as the data layer sees it."""
        if self._access is None:
            acting = self.request.environ.get(TENANT_HEADER_ENVIRON)     # X-Tenant-Id
            if acting is not None:
                principal = self.principal
                acting = acting_tenant(self.app.tenant_directory, principal.tenant,
                                       principal.permissions.specific(ACT_FOR_TENANT), acting)
            self._access = access_for(self.app, self.principal, acting)
        return self._access

    @property
    def locale(self) -> str:
        """``Accept-Language`` when it names an available language, else the caller's."""
        if self._locale is None:
            self._locale = caller_locale(self.request, self.principal,
                                         self.app.settings.available_locales)
        return self._locale
