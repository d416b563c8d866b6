"""Health checks for load balancers: ``GET /health/live`` and ``GET /health/ready``
(paths: ``svc.health.live-path``, ``svc.health.ready-path``). Anonymous unless
the authenticated URL patterns cover them; nothing secret in the answers."""
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.wrappers import Response

from ..web import json_response

if TYPE_CHECKING:
    from ..web import Context

NO_STORE = {"Cache-Control": "no-store"}


def live(ctx: "Context") -> Response:
    return json_response({"status": "UP"}, headers=NO_STORE)


def ready(ctx: "Context") -> Response:
    problems = ctx.app.readiness.problems()
    if problems:
        return json_response({"status": "DOWN", "details": problems}, status=503,
                             headers=NO_STORE)
    return json_response({"status": "UP"}, headers=NO_STORE)


def routes(live_path: str = "/health/live", ready_path: str = "/health/ready") -> list[Rule]:
    return [Rule(live_path, methods=["GET"], endpoint=live),
            Rule(ready_path, methods=["GET"], endpoint=ready)]


rules = routes()
