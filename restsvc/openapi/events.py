"""Operations of the change feed (and the webhooks, when present)."""
from .parts import JSON, failures, header, ok, operation, query
from .schemas import INTEGER, STRING

EVENTS = "Events"
SSE = "text/event-stream"

_STREAM_PARAMETERS = (
    query("entity", {"type": "array", "items": STRING},
          "Entities to follow (repeat the parameter); none: every one the caller may read"),
    query("lastEventId", STRING, "Resume after this event id (as the Last-Event-ID header)"),
)
_STREAM_ANSWERS = {
    **ok("Server-Sent Events: `id:` the event id, `data:` the event (JSON); `event: reset` "
         "when the id asked for is no longer kept, `event: end` when the token ends; a "
         "comment line keeps an idle stream open", {"type": "string"}, media=SSE),
    "503": {"description": "This instance serves as many streams as it may; retry shortly",
            "headers": {"Retry-After": header("Seconds to wait", INTEGER)},
            "content": {JSON: {"schema": {"$ref": "#/components/schemas/error"}}}},
}


def stream():
    return operation("Follow committed changes (Server-Sent Events)", EVENTS,
                     {**_STREAM_ANSWERS, **failures("BadRequest", "Unauthorized", "Forbidden",
                                                    "NotFound")},
                     (*_STREAM_PARAMETERS, {"name": "Last-Event-ID", "in": "header",
                                            "schema": STRING, "description": "Resume after it"}))


def ticket_stream():
    return operation("Follow committed changes, opened with a stream ticket (browsers)", EVENTS,
                     {**_STREAM_ANSWERS, **failures("BadRequest", "Unauthorized", "Forbidden",
                                                    "NotFound")},
                     (query("ticket", STRING, "From POST /rest/events/tickets", required=True),
                      *_STREAM_PARAMETERS))


def ticket():
    return operation("A short-lived ticket that opens one's change feed from a browser", EVENTS, {
        **ok("The ticket (valid for expiresIn seconds)", {
            "type": "object", "required": ["ticket", "expiresIn"],
            "properties": {"ticket": STRING, "expiresIn": INTEGER}}),
        **failures("BadRequest", "Unauthorized", "Forbidden")})


EVENT_ENDPOINTS = {
    ("GET", "/rest/events"): stream,
    ("GET", "/rest/events/stream"): ticket_stream,
    ("POST", "/rest/events/tickets"): ticket,
}
