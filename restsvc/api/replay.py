"""The HTTP side of safe retries (``restsvc/idempotency.py``): a handler
marked ``idempotent`` runs through ``answer`` when a POST or PUT carries an
``Idempotency-Key``; its answer is kept, and a repeat gets it back with
``Idempotent-Replayed: true`` instead of running again. A request refused
with an error before it wrote keeps nothing: the key is free for the
corrected request. An error after its writes were committed (``wrote``) is
its answer, kept like any other: a retry must not write again."""
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from werkzeug.wrappers import Response

from ..data.answer.etags import permissions_key
from ..errors import ApiError
from ..idempotency import HEADER, MAX_ANSWER, caller_of, fingerprint, sight
from ..web import Request, body_size, error_response

if TYPE_CHECKING:
    from ..idempotency import Replays
    from ..web import Context

Handler = TypeVar("Handler", bound=Callable[..., Response])
REPLAYED = "Idempotent-Replayed"
_WROTE = "restsvc.idempotency.wrote"


def idempotent(handler: Handler) -> Handler:
    """Mark a handler whose POST/PUT answers may be replayed for an Idempotency-Key."""
    handler.idempotent = True  # type: ignore[attr-defined]
    return handler


def wrote(request: Request) -> None:
    """The request's writes are committed: from now on it has run, and an
    error is its answer under its key (see the module docstring)."""
    request.environ[_WROTE] = True


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
    except ApiError as exc:
        if request.environ.get(_WROTE):
            kept = error_response(exc)
            replays.finish(row_id, kept.status_code, kept.headers.to_wsgi_list(), _body(kept))
        else:
            # Refused (validation, permissions, conflicts): the one write
            # path rolled back whatever it had begun, so a retry may run.
            replays.release(row_id)
        raise
    except BaseException:
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
