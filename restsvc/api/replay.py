"""The HTTP side of safe retries (``restsvc/idempotency.py``): a handler
marked ``idempotent`` runs through ``answer`` when a POST or PUT carries an
``Idempotency-Key``; its answer is kept, and a repeat gets it back with
``Idempotent-Replayed: true`` instead of running again."""
from werkzeug.wrappers import Response

from ..errors import ApiError
from ..idempotency import HEADER, MAX_ANSWER, caller_of, fingerprint
from ..web import body_size, error_response

REPLAYED = "Idempotent-Replayed"


def idempotent(handler):
    """Mark a handler whose POST/PUT answers may be replayed for an Idempotency-Key."""
    handler.idempotent = True
    return handler


def answer(replays, request, principal, run):
    """``run()``'s answer, or the one kept for this caller's key."""
    key = request.headers.get(HEADER)
    caller = caller_of(principal)
    if key is None or caller is None or request.method not in ("POST", "PUT"):
        return run()
    body = request.get_data(cache=True)     # the handler reads it again from here
    row_id, stored = replays.claim(caller, key, fingerprint(
        request.method, request.path, request.query_string, body))
    if stored is not None:
        status, headers, content = stored
        return Response(content, status=status, headers=headers + [[REPLAYED, "true"]])
    try:
        response = run()
    except ApiError as exc:
        kept = error_response(exc)
        replays.finish(row_id, kept.status_code, kept.headers.to_wsgi_list(), _body(kept))
        raise
    except BaseException:
        replays.release(row_id)
        raise
    replays.finish(row_id, response.status_code, response.headers.to_wsgi_list(), _body(response))
    return response


def _body(response):
    """The answer's body when it is complete and short enough to keep, else None."""
    size = body_size(response)
    if response.is_streamed or (size is not None and size > MAX_ANSWER):
        return None
    data = response.get_data()
    return data if len(data) <= MAX_ANSWER else None
