"""The HTTP side of safe retries (``restsvc/idempotency.py``): a handler
marked ``idempotent`` runs through ``answer`` when a POST or PUT carries an
``Idempotency-Key``; its answer is kept, and a repeat gets it back with
``Idempotent-Replayed: true`` instead of running again. A request refused
with an error before it wrote keeps nothing: the key is free for the
corrected request. An error after its writes were committed (``wrote``) is
its answer, kept like any other: a retry must not write again.

The claim of the key, the handler's writes and the kept answer are one write
transaction: on SQLite the request takes the write lock once, where three
transactions took it three times (issue 41), and a failure anywhere undoes
all three together. Service methods (``idempotent_apart``) run application
code that may call elsewhere and take its time: theirs claim, run and keep
the answer in transactions of their own, so the write lock is not held
across that code."""
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from werkzeug.wrappers import Response

from ..db import write_transaction

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
    """Mark a handler whose POST/PUT answers may be replayed for an
    Idempotency-Key; it runs in the key's write transaction."""
    handler.idempotent = True  # type: ignore[attr-defined]
    return handler


def idempotent_apart(handler: Handler) -> Handler:
    """``idempotent``, the handler running outside the key's transactions."""
    handler.idempotent = APART  # type: ignore[attr-defined]
    return handler


APART = "apart"


def wrote(request: Request) -> None:
    """The request's writes are committed: from now on it has run, and an
    error is its answer under its key (see the module docstring)."""
    request.environ[_WROTE] = True


def answer(replays: "Replays", ctx: "Context", run: Callable[[], Response],
           mark: object = True) -> Response:
    """``run()``'s answer, or the one kept for this caller's key. ``mark``:
    the handler's ``idempotent`` (``APART``: claim, run and keep apart)."""
    request = ctx.request
    key = request.headers.get(HEADER)
    if key is None or caller_of(ctx.principal) is None or request.method not in ("POST", "PUT"):
        return run()
    body = request.get_data(cache=True)     # the handler reads it again from here
    access = ctx.access
    caller = str(caller_of(ctx.principal, access.tenant))   # keys are per tenant too
    print_ = fingerprint(request.method, request.path, request.query_string, body)
    seen = sight(permissions_key(access.permissions, access.session))
    if mark != APART:
        return _together(replays, ctx, run, (caller, key, print_, seen))
    row_id, stored = replays.claim(caller, key, print_, seen)
    if stored is not None:
        return _replayed(stored)
    try:
        response = run()
    except ApiError as exc:
        if request.environ.get(_WROTE):
            _keep(replays, row_id, error_response(exc))
        else:
            # Refused (validation, permissions, conflicts): the one write
            # path rolled back whatever it had begun, so a retry may run.
            replays.release(row_id)
        raise
    except BaseException:
        replays.release(row_id)
        raise
    _keep(replays, row_id, response)
    return response


def _together(replays: "Replays", ctx: "Context", run: Callable[[], Response],
              claim: tuple[str, str, str, str]) -> Response:
    """``answer`` in one write transaction: the claim, the handler's writes
    (savepoints inside it) and the kept answer. A request refused before it
    wrote raises out of it: everything, its claim included, is rolled back."""
    request, kept_error = ctx.request, None
    with write_transaction(ctx.app.database):
        row_id, stored = replays.claim(*claim)
        if stored is None:
            try:
                response = run()
            except ApiError as exc:
                if not request.environ.get(_WROTE):
                    raise
                _keep(replays, row_id, error_response(exc))
                kept_error = exc
            else:
                _keep(replays, row_id, response)
    if kept_error is not None:
        raise kept_error
    if stored is not None:
        return _replayed(stored)
    return response


def _keep(replays: "Replays", row_id: str, response: Response) -> None:
    """Keep ``response`` as the answer under the claimed key ``row_id``."""
    replays.finish(row_id, response.status_code, response.headers.to_wsgi_list(), _body(response))


def _replayed(stored: tuple[int, list[tuple[str, str]], bytes]) -> Response:
    status, headers, content = stored
    return Response(content, status=status, headers=[*headers, (REPLAYED, "true")])


def _body(response: Response) -> bytes | None:
    """The answer's body when it is complete and short enough to keep, else None."""
    size = body_size(response)
    if response.is_streamed or (size is not None and size > MAX_ANSWER):
        return None
    data = response.get_data()
    return data if len(data) <= MAX_ANSWER else None
