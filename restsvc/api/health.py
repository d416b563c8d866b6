"""Health checks for load balancers: ``GET /health/live`` and ``GET /health/ready``
(paths: ``svc.health.live-path``, ``svc.health.ready-path``). Anonymous unless
the authenticated URL patterns cover them; nothing secret in the answers."""
from werkzeug.routing import Rule

from ..web import json_response

NO_STORE = {"Cache-Control": "no-store"}


def live(ctx):
    return json_response({"status": "UP"}, headers=NO_STORE)


def ready(ctx):
    problems = ctx.app.readiness.problems()
    if problems:
        return json_response({"status": "DOWN", "details": problems}, status=503,
                             headers=NO_STORE)
    return json_response({"status": "UP"}, headers=NO_STORE)


def routes(live_path="/health/live", ready_path="/health/ready"):
    return [Rule(live_path, methods=["GET"], endpoint=live),
            Rule(ready_path, methods=["GET"], endpoint=ready)]


rules = routes()
