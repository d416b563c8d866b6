"""Operations of the routes whose shape does not depend on the model:
authentication, files, metadata, messages, user session, documentation."""
from collections.abc import Callable, Iterable

from ..jsonio import JsonObject
from .operations import AUTH, DOCS, FILES, MESSAGES, METADATA, QUERIES, SESSION
from .apikeys import API_KEY_ENDPOINTS
from .batch import run_batch
from .events import EVENT_ENDPOINTS
from .parts import (ERROR, JSON, failures, flag, header, ok, operation, query)
from .schemas import STRING, array, binary, named_enum, ref

HEALTH = "Health"
METRICS = "Metrics"

NO_STORE: JsonObject = {"Cache-Control": header("no-store")}
FORM = "application/x-www-form-urlencoded"
OCTET_STREAM = "application/octet-stream"
YAML = "application/yaml"
CLIENT_AUTH: list[dict[str, list[str]]] = [{"clientBasic": []}, {}]
# What writes one fixed operation.
Build = Callable[[], JsonObject]


def _oauth_failures(*statuses: str) -> dict[str, JsonObject]:
    answers: dict[str, JsonObject] = {
        "400": {"description": "Invalid request or grant (RFC 6749 section 5.2)",
                "headers": NO_STORE, "content": {JSON: {"schema": ref("oauthError")}}},
        "401": {"description": "Client authentication failed",
                "headers": {**NO_STORE, "WWW-Authenticate": header('Basic realm="..."')},
                "content": {JSON: {"schema": ref("oauthError")}}},
        "413": {"description": "The form is larger than the service accepts",
                "headers": NO_STORE, "content": {JSON: {"schema": ref("oauthError")}}},
        "429": {"description": "Too many failed authentications: refused until the window ends",
                "headers": {**NO_STORE, "Retry-After": header("Seconds to wait", {"type": "integer"})},
                "content": {JSON: {"schema": ref("oauthError")}}},
    }
    return {status: answers[status] for status in statuses}


def _form(properties: JsonObject, required: Iterable[str]) -> JsonObject:
    return {"required": True, "content": {FORM: {"schema": {
        "type": "object", "properties": properties, "required": list(required)}}}}


def _client_fields() -> JsonObject:
    return {"client_id": {"type": "string", "description": "With client_secret_post"},
            "client_secret": {"type": "string", "description": "With client_secret_post"}}


def token() -> JsonObject:
    op = operation("Get an access token", AUTH, {
        **ok("The token", ref("tokenResponse"), headers=NO_STORE),
        **_oauth_failures("400", "401", "413", "429")},
        body=_form({"grant_type": named_enum("grantType", [
                        "client_credentials", "password", "authorization_code", "refresh_token"]),
                    "username": {"type": "string", "description": "password grant"},
                    "password": {"type": "string", "description": "password grant"},
                    "code": {"type": "string", "description": "authorization_code grant"},
                    "redirect_uri": {"type": "string", "description":
                                     "authorization_code grant, as in the authorization request"},
                    "code_verifier": {"type": "string", "description":
                                      "authorization_code grant (PKCE, required)"},
                    "refresh_token": {"type": "string", "description": "refresh_token grant"},
                    "scope": {"type": "string", "description":
                              "A subset of the client's registered scopes"},
                    **_client_fields()}, ("grant_type",)),
        description="The client authenticates with HTTP Basic (client_secret_basic), with "
                    "client_id and client_secret form fields (client_secret_post), or, a public "
                    "client, with client_id alone. A client without registered scopes may not "
                    "ask for any (invalid_scope); for one with scopes the answer says which "
                    "were granted.")
    op["security"] = CLIENT_AUTH
    return op


def revoke() -> JsonObject:
    op = operation("Revoke a token (RFC 7009)", AUTH, {
        **ok("Revoked, or unknown (the same answer)", headers=NO_STORE),
        **_oauth_failures("400", "401", "413", "429")},
        body=_form({"token": STRING, "token_type_hint": {
            **named_enum("tokenTypeHint", ["access_token", "refresh_token"])}, **_client_fields()},
            ("token",)))
    op["security"] = CLIENT_AUTH
    return op


def introspect() -> JsonObject:
    op = operation("Introspect a token (RFC 7662)", AUTH, {
        **ok("What the token is; only its client sees it active", ref("introspection"),
             headers=NO_STORE),
        **_oauth_failures("400", "401", "413", "429")},
        body=_form({"token": STRING, "token_type_hint": STRING, **_client_fields()}, ("token",)))
    op["security"] = CLIENT_AUTH
    return op


_PAGE = "text/html"


def authorize() -> JsonObject:
    names = ("response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge",
             "code_challenge_method")
    return operation("Authorization request: the sign-in page (RFC 6749 4.1.1)", AUTH, {
        **ok("The sign-in form", STRING, media=_PAGE),
        "303": {"description": "Back to the client's redirect URI with an error and the state"},
        "400": {"description": "Unknown client or redirect URI: shown on the page",
                "content": {_PAGE: {"schema": STRING}}}},
        [query(name, STRING, "RFC 6749 4.1.1 / RFC 7636 (code_challenge_method S256)")
         for name in names])


def sign_in() -> JsonObject:
    return operation("Sign in through the form", AUTH, {
        "303": {"description": "Back to the client's redirect URI with a code and the state"},
        "400": {"description": "The form again with a message", "content": {_PAGE: {"schema": STRING}}},
        "429": {"description": "Too many failed sign-ins: the form again with a message",
                "content": {_PAGE: {"schema": STRING}}}},
        body=_form({"request": STRING, "username": STRING, "password": STRING},
                   ("request", "username", "password")))


UPLOAD_TYPES = ("multipart/form-data", OCTET_STREAM)


def upload() -> JsonObject:
    body = {"required": True, "content": {
        "multipart/form-data": {"schema": {"type": "object", "properties": {
            "file": binary(OCTET_STREAM)}, "required": ["file"]}},
        # Option B takes the file in any other type too (application/pdf, image/png,
        # ...): */* would say so, but client generators refuse it.
        OCTET_STREAM: {"schema": binary(OCTET_STREAM)}}}
    return operation("Upload a file", FILES, {
        **ok("The stored file", ref("fileInfo"), "201",
             {"Location": header("The download URL of the file")}),
        **failures("BadRequest", "Forbidden", "NotFound", "PayloadTooLarge"),
        "415": {"description": "A multipart body of another type than multipart/form-data",
                "content": {JSON: {"schema": ERROR}}}},
        [query("name", STRING, "The file name; required when the body is the file itself"),
         query("storageName", STRING, "The file storage (default: the default storage)")],
        body, description="Needs the specific policy rest.fileUpload.enabled. The file is the "
                          "part file of a multipart/form-data body, or the body itself in any "
                          "other type, e.g. its own (the type a file is served with comes from "
                          "its name, never from the upload).")


_DOWNLOAD_HEADERS: JsonObject = {
    "ETag": header("The file's version"), "Last-Modified": header("When it was stored"),
    "Accept-Ranges": header("bytes"), "Content-Length": header("Bytes sent", {"type": "integer"}),
    "Content-Disposition": header("inline or attachment, with filename and filename*"),
    "Cache-Control": header("no-cache")}


def download(method: str) -> Build:
    def build() -> JsonObject:
        def answer(description: str, status: str,
                   extra: JsonObject | None = None) -> dict[str, JsonObject]:
            response: JsonObject = {"description": description,
                        "headers": {**_DOWNLOAD_HEADERS, **(extra or {})}}
            if method != "HEAD":
                # Bytes of the type the file's name gives; generators read the first.
                response["content"] = {OCTET_STREAM: {"schema": binary()},
                                       "*/*": {"schema": binary()}}
            return {status: response}
        return operation("Download a file" if method == "GET" else "File headers only", FILES, {
            **answer("The file", "200"),
            **answer("The requested range", "206", {"Content-Range": header("bytes a-b/size")}),
            "304": {"description": "Not modified (If-None-Match / If-Modified-Since)"},
            "416": {"description": "The range lies beyond the end",
                    "headers": {"Content-Range": header("bytes */size")},
                    "content": {JSON: {"schema": ERROR}}},
            **failures("BadRequest", "Forbidden", "NotFound")},
            [query("fileRef", STRING, "The file reference", required=True),
             flag("attachment", "Content-Disposition attachment even for inline types"),
             {"name": "Range", "in": "header", "schema": STRING, "description": "bytes=a-b"}],
            description="Needs the specific policy rest.fileDownload.enabled.")
    return build


def set_locale() -> JsonObject:
    return operation(
        "Set the locale of the caller's session", SESSION, {
            **ok("The session with its new locale", ref("userSession"), headers=NO_STORE),
            **failures("BadRequest", "PayloadTooLarge"),
            "422": {"description": "Not an available locale, none named, or a token without "
                                   "a session here (one of an identity provider)",
                    "content": {JSON: {"schema": ERROR}}}},
        body={"required": False, "content": {JSON: {"schema": ref("localeInput")}}},
        description="The locale is the body's, or without a body the language of "
                    "Accept-Language (among svc.core.available-locales). It holds for the "
                    "token, its refresh token and the tokens refreshed from it (a client "
                    "credentials token: that token); captions, messages and validation "
                    "messages then use it unless a request sends Accept-Language.")


def _get(summary: str, tag: str, schema: JsonObject, *failure_names: str,
         deprecated: bool = False) -> Build:
    def build() -> JsonObject:
        op = operation(summary, tag, {**ok(summary, schema), **failures(*failure_names)})
        if deprecated:
            op["deprecated"] = True
        return op
    return build


def _document(summary: str) -> Build:
    def build() -> JsonObject:
        return operation(summary, DOCS, {"200": {
            "description": "The document (YAML for .yaml paths or Accept: application/yaml)",
            "content": {JSON: {"schema": ref("openapiDocument")},
                        YAML: {"schema": ref("openapiDocument")}}}})
    return build


def docs_page() -> JsonObject:
    return operation("The documentation page", DOCS, {"200": {
        "description": "An HTML page that renders the detailed document",
        "content": {"text/html": {"schema": {"type": "string"}}}}})


def _health(summary: str, ready: bool) -> Build:
    status: JsonObject = {"type": "object", "required": ["status"], "properties": {
        "status": named_enum("healthStatus", ["UP", "DOWN"]),
        "details": {"type": "object", "description": "What is not ready"}}}
    no_store = {"Cache-Control": header("no-store")}

    def build() -> JsonObject:
        answers = ok("UP", status, headers=no_store)
        if ready:
            answers["503"] = {"description": "DOWN: shutting down, or the database or a file "
                                             "storage cannot be reached",
                              "headers": no_store, "content": {JSON: {"schema": status}}}
        return operation(summary, HEALTH, answers)
    return build


def metrics() -> JsonObject:
    return operation(
        "Prometheus metrics of this instance", METRICS,
        {**ok("The figures in the Prometheus text format", {"type": "string"},
              headers={"Cache-Control": header("no-store")}, media="text/plain"),
         **failures("Forbidden")},
        description="For a token whose roles hold the metrics grant (the role "
                    "metrics-reader; system-full-access does not): 401 without a token, "
                    "403 with another one.")


# Routes at configurable paths, by (method, handler).
HANDLERS: dict[tuple[str, str], Build] = {
    ("GET", "restsvc.api.health.live"): _health("Is this instance alive", False),
    ("GET", "restsvc.api.health.ready"): _health("Is this instance ready for requests", True),
    ("GET", "restsvc.api.metrics.scrape"): metrics,
}

# Answered without the database (unless the gate looks a token up).
NO_DATABASE = {("GET", "restsvc.api.health.live"), ("GET", "restsvc.api.health.ready"),
               ("GET", "/rest/docs"),
               ("GET", "/rest/docs/openapi.json"), ("GET", "/rest/docs/openapi.yaml"),
               ("GET", "/rest/docs/openapiDetailed.json"), ("GET", "/rest/docs/openapiDetailed.yaml")}

ENDPOINTS: dict[tuple[str, str], Build] = {
    ("POST", "/oauth2/token"): token,
    ("POST", "/oauth2/revoke"): revoke,
    ("POST", "/oauth2/introspect"): introspect,
    ("GET", "/oauth2/authorize"): authorize,
    ("POST", "/oauth2/authorize"): sign_in,
    ("GET", "/.well-known/oauth-authorization-server"): _get(
        "Authorization server metadata (RFC 8414)", AUTH, {"type": "object"}),
    ("GET", "/rest/queries/<entity_name>"): _get(
        "Predefined queries of an entity", QUERIES, array(ref("queryDescriptor")),
        "Forbidden", "NotFound"),
    ("POST", "/rest/files"): upload,
    ("GET", "/rest/files"): download("GET"),
    ("HEAD", "/rest/files"): download("HEAD"),
    ("GET", "/rest/metadata/entities"): _get("All entities", METADATA, array(ref("entityMetadata"))),
    ("GET", "/rest/metadata/entities/<entity_name>"): _get(
        "One entity", METADATA, ref("entityMetadata"), "NotFound"),
    ("GET", "/rest/metadata/entities/<entity_name>/fetchPlans"): _get(
        "The named fetch plans of an entity", METADATA, array(ref("fetchPlan")), "NotFound"),
    ("GET", "/rest/metadata/entities/<entity_name>/fetchPlans/<plan_name>"): _get(
        "One fetch plan (built-ins too)", METADATA, ref("fetchPlan"), "NotFound"),
    ("GET", "/rest/metadata/entities/<entity_name>/views"): _get(
        "The named fetch plans of an entity (the deprecated name of fetchPlans)", METADATA,
        array(ref("fetchPlan")), "NotFound", deprecated=True),
    ("GET", "/rest/metadata/entities/<entity_name>/views/<plan_name>"): _get(
        "One fetch plan (the deprecated name of fetchPlans/{planName})", METADATA,
        ref("fetchPlan"), "NotFound", deprecated=True),
    ("GET", "/rest/metadata/enums"): _get("All enums", METADATA, array(ref("enumMetadata"))),
    ("GET", "/rest/metadata/enums/<enum_name>"): _get(
        "One enum", METADATA, ref("enumMetadata"), "NotFound"),
    ("GET", "/rest/metadata/datatypes"): _get("Datatypes", METADATA, array(ref("datatype"))),
    ("GET", "/rest/capabilities"): _get("Optional features", METADATA, ref("capabilities")),
    ("GET", "/rest/messages/entities"): _get("Captions of all entities", MESSAGES, ref("messages")),
    ("GET", "/rest/messages/entities/<entity_name>"): _get(
        "Captions of one entity", MESSAGES, ref("messages"), "NotFound"),
    ("GET", "/rest/messages/enums"): _get("Captions of all enums", MESSAGES, ref("messages")),
    ("GET", "/rest/messages/enums/<enum_name>"): _get(
        "Captions of one enum", MESSAGES, ref("messages"), "NotFound"),
    ("GET", "/rest/userInfo"): _get("The caller", SESSION, ref("userInfo")),
    ("GET", "/rest/version"): _get("The versions of restsvc and of the application", METADATA,
                                   ref("version")),
    ("GET", "/rest/user-session"): lambda: operation(
        "The caller's session: its name and locale", SESSION,
        ok("The session", ref("userSession"), headers=NO_STORE)),
    ("PUT", "/rest/user-session/locale"): set_locale,
    ("GET", "/rest/permissions"): _get("The caller's effective permissions", SESSION,
                                       ref("permissions")),
    ("GET", "/rest/docs"): docs_page,
    ("GET", "/rest/docs/openapi.json"): _document("The generic OpenAPI document"),
    ("GET", "/rest/docs/openapi.yaml"): _document("The generic OpenAPI document"),
    ("GET", "/rest/docs/openapiDetailed.json"): _document("This project's OpenAPI document"),
    ("GET", "/rest/docs/openapiDetailed.yaml"): _document("This project's OpenAPI document"),
}
ENDPOINTS.update(EVENT_ENDPOINTS)
ENDPOINTS.update(API_KEY_ENDPOINTS)
ENDPOINTS[("POST", "/rest/batch")] = run_batch
