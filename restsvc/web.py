"""Small HTTP helpers shared by the handlers: JSON in and out, typed query values."""
from werkzeug.wrappers import Response

from .data.access import access_for
from .errors import BadRequest
from .jsonio import dumps, loads

JSON_TYPE = "application/json;charset=UTF-8"


def json_response(data, status=200, headers=None):
    return Response(dumps(data), status=status, headers=headers, content_type=JSON_TYPE)


def list_response(rows, total=None):
    """An entity list; ``X-Total-Count`` when a total was asked for (``returnCount``)."""
    headers = {"X-Total-Count": str(total)} if total is not None else None
    return json_response(rows, headers=headers)


def no_content():
    return Response(status=204)


def read_json_body(request, error="Malformed request JSON data structure"):
    """The request body as JSON; any content type is accepted, as the reference does."""
    raw = request.get_data(cache=False)
    try:
        return loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest(error, "") from None


def query_int(request, name, default=None, minimum=0):
    value = request.args.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise BadRequest("Invalid parameter value", f"Invalid value of parameter {name}: {value}") from None
    if number < minimum:
        raise BadRequest("Invalid parameter value", f"Parameter {name} must be at least {minimum}")
    return number


def query_bool(request, name, default=False):
    value = request.args.get(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered not in ("true", "false"):
        raise BadRequest("Invalid parameter value", f"Invalid value of parameter {name}: {value}")
    return lowered == "true"


def error_response(error):
    return json_response(error.body(), status=error.status, headers=error.headers)


class Context:
    """What a handler gets: the app, the request and the caller."""

    __slots__ = ("app", "request", "principal", "_locale", "_access")

    def __init__(self, app, request, principal):
        self.app = app
        self.request = request
        self.principal = principal
        self._locale = None
        self._access = None

    @property
    def permissions(self):
        return self.principal.permissions

    @property
    def access(self):
        """The caller as the data layer sees it."""
        if self._access is None:
            self._access = access_for(self.app, self.principal)
        return self._access

    @property
    def locale(self):
        """``Accept-Language`` when it names an available language, else the caller's."""
        if self._locale is None:
            available = self.app.settings.available_locales
            requested = self.request.accept_languages.best_match(available)
            self._locale = requested or (
                self.principal.locale if self.principal.locale in available else None
            ) or available[0]
        return self._locale
