"""Operations of the change feed (and the webhooks, when present)."""
from collections.abc import Callable

from ..jsonio import JsonObject
from .parts import JSON, failures, header, json_query, ok, operation, query
from .schemas import INTEGER, STRING, named_enum, ref

EVENTS = "Events"
SSE = "text/event-stream"

_STREAM_PARAMETERS = (
    query("entity", {"type": "array", "items": STRING},
          "Entities to follow (repeat the parameter); none: every one the caller may read"),
    query("lastEventId", STRING, "Resume after this event id (as the Last-Event-ID header)"),
    json_query("filter", ref("filter"),
               "Only events of rows this search filter matches (with exactly one entity): "
               "each event then has match, false for an update after which the row no "
               "longer matches (sent once)"),
)


def _retry_later(description: str) -> JsonObject:
    """A refusal in the error format that says when to try again."""
    return {"description": description,
            "headers": {"Retry-After": header("Seconds to wait", INTEGER)},
            "content": {JSON: {"schema": {"$ref": "#/components/schemas/error"}}}}


_STREAM_ANSWERS = {
    **ok("Server-Sent Events: `id:` the event id, `data:` the event (JSON); `event: reset` "
         "when the id asked for is no longer kept, `event: end` when the token ends; a "
         "comment line keeps an idle stream open", {"type": "string"}, media=SSE),
    "503": _retry_later("This instance serves as many streams as it may; retry shortly"),
    "429": _retry_later("The caller holds as many of this instance's streams as one caller "
                        "may (svc.events.max-stream-share-per-caller); close one or retry"),
}


def stream() -> JsonObject:
    return operation("Follow committed changes (Server-Sent Events)", EVENTS,
                     {**_STREAM_ANSWERS, **failures("BadRequest", "Unauthorized", "Forbidden",
                                                    "NotFound")},
                     (*_STREAM_PARAMETERS, {"name": "Last-Event-ID", "in": "header",
                                            "schema": STRING, "description": "Resume after it"}))


def ticket_stream() -> JsonObject:
    return operation("Follow committed changes, opened with a stream ticket (browsers)", EVENTS,
                     {**_STREAM_ANSWERS, **failures("BadRequest", "Unauthorized", "Forbidden",
                                                    "NotFound")},
                     (query("ticket", STRING, "From POST /rest/events/tickets", required=True),
                      *_STREAM_PARAMETERS))


def ticket() -> JsonObject:
    return operation("A short-lived ticket that opens one's change feed from a browser", EVENTS, {
        **ok("The ticket (valid for expiresIn seconds)", {
            "type": "object", "required": ["ticket", "expiresIn"],
            "properties": {"ticket": STRING, "expiresIn": INTEGER}}),
        **failures("BadRequest", "Unauthorized", "Forbidden")})


_ENTITIES = {"type": "array", "items": STRING}
_KINDS = {"type": "array", "items": named_enum("eventKind", ["CREATE", "UPDATE", "DELETE"])}
_FILTER = {**ref("filter"), "description": "Only events of rows this search filter matches "
                                            "(one entity); deliveries then have match"}
_WEBHOOK = {"type": "object", "required": ["id", "url", "entities", "kinds"], "properties": {
    "id": STRING, "url": STRING, "entities": _ENTITIES, "kinds": _KINDS,
    "createdDate": {"type": "string", "format": "date-time"},
    "fromSettings": {"type": "boolean"}, "filter": _FILTER}}
_REGISTRATION = {"required": True, "content": {JSON: {"schema": {
    "type": "object", "required": ["url", "entities", "secret"], "properties": {
        "url": STRING, "entities": _ENTITIES, "kinds": _KINDS, "filter": _FILTER,
        "secret": {"type": "string", "minLength": 16,
                   "description": "Signs each delivery (Svc-Signature); never answered"}}}}}}
_DEAD_LETTER = {"type": "object", "properties": {
    "eventId": INTEGER, "attempts": INTEGER, "lastStatus": {"type": ["integer", "null"]},
    "lastError": {"type": ["string", "null"]}, "event": {"type": ["object", "null"]}}}
_W = "/rest/webhooks/<webhook_id>"


def _webhook_op(summary: str, answers: dict[str, JsonObject], body: JsonObject | None = None,
                *fails: str) -> Callable[[], JsonObject]:
    return lambda: operation(summary, EVENTS, {**answers, **failures(*fails)}, body=body,
                             description="Needs the grant rest.webhooks.")


EVENT_ENDPOINTS: dict[tuple[str, str], Callable[[], JsonObject]] = {
    ("POST", "/rest/webhooks"): _webhook_op(
        "Register a webhook", ok("Registered (the secret is not answered)", _WEBHOOK, "201"),
        _REGISTRATION, "BadRequest", "Forbidden"),
    ("GET", "/rest/webhooks"): _webhook_op(
        "All webhooks", ok("The webhooks", {"type": "array", "items": _WEBHOOK})),
    ("GET", _W): _webhook_op("One webhook", ok("The webhook", _WEBHOOK), None, "NotFound"),
    ("DELETE", _W): _webhook_op("Remove a webhook and its pending deliveries",
                                {"204": {"description": "Removed"}}, None, "NotFound",
                                "Conflict"),
    ("GET", f"{_W}/dead-letters"): _webhook_op(
        "Deliveries that failed for the whole retry period",
        ok("The dead letters", {"type": "array", "items": _DEAD_LETTER}), None, "NotFound"),
    ("POST", f"{_W}/dead-letters/replay"): _webhook_op(
        "Deliver the dead letters again", ok("How many", {
            "type": "object", "properties": {"replayed": INTEGER}}), None, "NotFound"),
    ("GET", "/rest/events"): stream,
    ("GET", "/rest/events/stream"): ticket_stream,
    ("POST", "/rest/events/tickets"): ticket,
}
