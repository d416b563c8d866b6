"""The HTTP side of safe retries (``restsvc/idempotency.py``): a handler
marked ``idempotent`` runs through ``answer`` when a POST or PUT carries an
``Idempotency-Key``; its answer is kept, and a repeat gets it back with
``Idempotent-Replayed: true`` instead of running again. A request refused
with an error keeps nothing: the key is free for the corrected request."""
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from werkzeug.wrappers import Response

from ..data.etags import permissions_key
from ..idempotency import HEADER, MAX_ANSWER, caller_of, fingerprint, sight
from ..web import body_size

if TYPE_CHECKING:
    from ..idempotency import Replays
    from ..web import Context

Handler = TypeVar("Handler", bound=Callable[..., Response])
REPLAYED = "Idempotent-Replayed"


def idempotent(handler: Handler) -> Handler:
    """Mark a handler whose POST/PUT answers may be replayed for an Idempotency-Key."""
    handler.idempotent = True  # type: ignore[attr-defined]
    return handler


def answer(replays: "Replays", ctx: "Context", run: Callable[[], Response]) -> Response:
    """``run()``'s answer, or the one kept for this caller's key."""
    request = ctx.request
    key = request.headers.get(HEADER)
    caller = caller_of(ctx.principal)
    if key is None or caller is None or request.method not in ("POST", "PUT"):
        return run()
    body = request.get_data(cache=True)     # the handler reads it again from here
    access = ctx.access
    row_id, stored = replays.claim(caller, key, fingerprint(
        request.method, request.path, request.query_string, body),
        sight(permissions_key(access.permissions, access.session)))
    if stored is not None:
        status, headers, content = stored
        return Response(content, status=status, headers=[*headers, (REPLAYED, "true")])
    try:
        response = run()
    except BaseException:
        # Refused (an ApiError: validation, permissions, conflicts) or failed:
        # the write path rolled back, so a retry may run again.
        replays.release(row_id)
        raise
    replays.finish(row_id, response.status_code, response.headers.to_wsgi_list(), _body(response))
    return response


def _body(response: Response) -> bytes | None:
    """The answer's body when it is complete and short enough to keep, else None."""
    size = body_size(response)
    if response.is_streamed or (size is not None and size > MAX_ANSWER):
        return None
    data = response.get_data()
    return data if len(data) <= MAX_ANSWER else None
