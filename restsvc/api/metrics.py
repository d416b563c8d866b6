"""The Prometheus scrape endpoint, at ``svc.metrics.path`` (none by default).

Operational figures are a grant of their own: the caller's token must hold
the resource role ``metrics-reader``; ``system-full-access`` does not imply
it (it grants every entity, service and report, not the operator's view).
No token: 401; a token without the role: 403."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..errors import Forbidden, Unauthorized
from ..observability.metrics import exposition
from ..security.gate import needs_token
from ..security.scopes import checks
from ..security.roles import METRICS_READER
from ..web import NO_STORE, text_response

if TYPE_CHECKING:
    from ..web import Context

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@needs_token
@checks("metrics.read")
def scrape(ctx: "Context") -> Response:
    principal = ctx.principal
    if principal.client_id is None:
        raise Unauthorized(ctx.app.settings.realm, "invalid_token",
                           "Full authentication is required: send Authorization: Bearer <token>")
    if not principal.permissions.specific("metrics.read"):
        raise Forbidden("Forbidden", f"The metrics need the {METRICS_READER.code} role "
                                     "(and, for a token with scopes, the scope read)")
    instruments = ctx.app.instruments
    assert instruments is not None      # this route exists only with svc.metrics.path
    return text_response(exposition(instruments.collect()), headers=NO_STORE,
                         content_type=CONTENT_TYPE)


def routes(path: str) -> list[Rule]:
    return [Rule(path, methods=["GET"], endpoint=scrape)]
