"""API documentation: the OpenAPI documents (JSON, YAML) and a page that
renders the detailed one with Swagger UI, whose files come from the optional
``swagger-ui-py`` package (``pip install restsvc[docs]``), never from a CDN."""
import html
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from werkzeug.routing import Rule
from werkzeug.utils import send_file
from werkzeug.wrappers import Response

from ..errors import NotFound
from ..openapi import DETAILED, GENERIC, PUBLIC, Documents, Route
from ..openapi.document import DocumentBuilder
from ..web import NO_STORE
from .metadata import viewer

if TYPE_CHECKING:
    from ..parts import AppParts
    from ..data.read.queries import Query
    from ..model.metadata import MetaClass, Metadata
    from ..web import Context

YAML_TYPE = "application/yaml"
YAML_ALIASES = (YAML_TYPE, "application/x-yaml", "text/yaml")
# The viewer's files restsvc serves; nothing else of the package is reachable.
VIEWER_FILES = {"swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript",
                "favicon-32x32.png": "image/png"}
# The page opens without a token on the public document (PUBLIC_DOCUMENT:
# the API's title and description, how to sign in, the operations that need
# no token, and only the sign-in flows the registered clients can use); once
# a token is there it loads the detailed document with it, so the page shows
# what the caller's roles allow. The token stays in the page's memory.
PUBLIC_DOCUMENT = "openapiPublic.json"
INIT_SCRIPT = b"""window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  var documentUrl = new URL(root.dataset.url, window.location.href).href;
  var publicUrl = new URL(root.dataset.publicUrl, window.location.href).href;
  var token = null;
  function signedIn(system, accessToken) {
    if (!accessToken || accessToken === token) { return; }
    token = accessToken;
    system.specActions.updateUrl(documentUrl);
    system.specActions.download(documentUrl);
  }
  function LoadAfterSignIn() {
    return {statePlugins: {auth: {wrapActions: {
      authorizeOauth2: function (original, system) {
        return function (payload) {
          var result = original(payload);
          signedIn(system, payload && payload.token && payload.token.access_token);
          return result;
        };
      },
      authorize: function (original, system) {
        return function (payload) {
          var result = original(payload);
          var bearer = payload && payload.bearerAuth;
          signedIn(system, bearer && bearer.value);
          return result;
        };
      }
    }}}};
  }
  window.ui = SwaggerUIBundle({
    url: publicUrl, dom_id: "#swagger-ui", deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis], plugins: [LoadAfterSignIn], layout: "BaseLayout",
    validatorUrl: null, displayRequestDuration: true, tryItOutEnabled: false,
    requestInterceptor: function (request) {
      if (token && request.loadSpec) { request.headers.Authorization = "Bearer " + token; }
      return request;
    }
  });
  // Where the settings open the documents to everyone, show the whole one at once.
  fetch(documentUrl, {credentials: "omit"}).then(function (response) {
    if (response.ok && token === null) { window.ui.specActions.updateUrl(documentUrl);
                                         window.ui.specActions.download(documentUrl); }
  });
});
"""
PAGE_HEADERS = {
    # The page runs only its own files; Swagger UI sets inline styles and data: images.
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def viewer_dir() -> Path | None:
    """The directory of the viewer's files, or None when the package is absent."""
    spec = importlib.util.find_spec("swagger_ui")   # located, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(next(iter(spec.submodule_search_locations))) / "static"
    return static if (static / "swagger-ui-bundle.js").is_file() else None


def documents(app: "AppParts", queries: "Sequence[Query]") -> Documents:
    """The app's Documents, built from the same route table the router uses."""
    routes: list[Route] = []
    for rule in app.url_map.iter_rules():
        if getattr(rule.endpoint, "undocumented", False):
            continue
        # A rule without methods (an application's, answering every method)
        # is listed with none, instead of failing the start-up.
        methods = [m for m in rule.methods or () if m != "OPTIONS"]
        summary = (rule.endpoint.__doc__ or "").strip().split("\n")[0]
        handler = f"{rule.endpoint.__module__}.{rule.endpoint.__qualname__}"
        builtin = rule.endpoint.__module__.startswith("restsvc.api.")
        routes.append(Route(rule.rule, tuple(sorted(methods)), summary, handler,
                            app.settings.paths.unmount(rule.rule) if builtin else "",
                            getattr(rule.endpoint, "scope_action", ""),
                            getattr(rule.endpoint, "needs_token", False)))
    own = [_declared(app.metadata, model).name for model in app.application.entities]
    return Documents(DocumentBuilder(routes, app.gate, app.settings, app.metadata, queries,
                                     app.services, app.application.version, own))


def _declared(metadata: "Metadata", model: type) -> "MetaClass":
    """The metadata of one of the application's entity classes (it has one)."""
    meta = metadata.of_model(model)
    assert meta is not None, f"{model.__name__} is not in the metadata"
    return meta


def _answer(ctx: "Context", kind: str, as_yaml: bool) -> Response:
    request = ctx.request
    if not as_yaml:
        best = request.accept_mimetypes.best_match(("application/json",) + YAML_ALIASES)
        as_yaml = best in YAML_ALIASES
    # The caller's permissions; the whole model on a path opened without a token.
    data = ctx.app.documents.render(kind, request.root_path, as_yaml, viewer(ctx))
    content_type = f"{YAML_TYPE};charset=UTF-8" if as_yaml else "application/json;charset=UTF-8"
    # The detailed document shows what the caller may do: never kept for another caller.
    headers = {"Vary": "Accept"} if kind == GENERIC else {**NO_STORE, "Vary": "Accept"}
    return Response(data, content_type=content_type, headers=headers)


def generic_json(ctx: "Context") -> Response:
    return _answer(ctx, GENERIC, False)


def generic_yaml(ctx: "Context") -> Response:
    return _answer(ctx, GENERIC, True)


def detailed_json(ctx: "Context") -> Response:
    return _answer(ctx, DETAILED, False)


def detailed_yaml(ctx: "Context") -> Response:
    return _answer(ctx, DETAILED, True)


def page(ctx: "Context") -> Response:
    """The detailed document in Swagger UI (try-it-out with a bearer token)."""
    root, paths = ctx.request.root_path, ctx.app.settings.paths
    base = html.escape(root + paths.rest("docs"))
    if viewer_dir() is None:
        body = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>API"
                f"</title></head><body><h1>API documentation</h1><p>The viewer needs the "
                f"optional package swagger-ui-py: <code>pip install 'restsvc[docs]'</code>.</p>"
                f"<p>The documents: <a href=\"{base}/openapiDetailed.json\">openapiDetailed.json"
                f"</a>, <a href=\"{base}/openapi.json\">openapi.json</a> (also .yaml).</p>"
                f"</body></html>")
    else:
        body = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>API documentation</title>"
                f"<link rel=\"icon\" type=\"image/png\" href=\"{base}/assets/favicon-32x32.png\">"
                f"<link rel=\"stylesheet\" href=\"{base}/assets/swagger-ui.css\"></head><body>"
                f"<div id=\"swagger-ui\" data-url=\"{base}/openapiDetailed.json\" "
                f"data-public-url=\"{base}/assets/{PUBLIC_DOCUMENT}\" "
                f"data-token-url=\"{html.escape(root + paths.token)}\"></div>"
                f"<script src=\"{base}/assets/swagger-ui-bundle.js\"></script>"
                f"<script src=\"{base}/assets/restsvc-init.js\"></script></body></html>")
    return Response(body, content_type="text/html;charset=UTF-8", headers=PAGE_HEADERS)


def asset(ctx: "Context", asset: str) -> Response:
    """A file of the documentation page."""
    if asset == "restsvc-init.js":
        return Response(INIT_SCRIPT, content_type="text/javascript;charset=UTF-8",
                        headers={"Cache-Control": "no-cache"})
    if asset == PUBLIC_DOCUMENT:
        data = ctx.app.documents.render(PUBLIC, ctx.request.root_path)
        return Response(data, content_type="application/json;charset=UTF-8",
                        headers={"Cache-Control": "no-cache"})
    directory = viewer_dir()
    if asset not in VIEWER_FILES or directory is None:
        raise NotFound("Not found", f"No documentation file {asset}")
    response = send_file(directory / asset, ctx.request.environ, mimetype=VIEWER_FILES[asset],
                         max_age=86400)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


asset.undocumented = True  # type: ignore[attr-defined]  # the page's files, not operations

rules = [
    Rule("/rest/docs", methods=["GET"], endpoint=page),
    Rule("/rest/docs/assets/<asset>", methods=["GET"], endpoint=asset),
    Rule("/rest/docs/openapi.json", methods=["GET"], endpoint=generic_json),
    Rule("/rest/docs/openapi.yaml", methods=["GET"], endpoint=generic_yaml),
    Rule("/rest/docs/openapiDetailed.json", methods=["GET"], endpoint=detailed_json),
    Rule("/rest/docs/openapiDetailed.yaml", methods=["GET"], endpoint=detailed_yaml),
]
