"""The request id: the caller's ``X-Request-Id`` when it is well-formed, else
one made here; it is answered in ``X-Request-Id`` and carried by every log
line written while the request is served (a context variable: each gunicorn
thread, or asyncio task of a host, has its own).

A made id is this process's random prefix and a counter: unique without the
cost of a UUID per request; the prefix is drawn again in a forked child.
"""
import contextvars
import itertools
import os
import re
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

HEADER = "X-Request-Id"
current: contextvars.ContextVar[str | None] = contextvars.ContextVar("restsvc_request_id",
                                                                     default=None)

_WELL_FORMED = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")


class _Maker:
    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        self.prefix = secrets.token_hex(6)
        self.counter = itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}-{next(self.counter)}"


new_id = _Maker()
os.register_at_fork(after_in_child=new_id.renew)


def request_id(environ: "WSGIEnvironment") -> str:
    """The id of the request whose WSGI environ is ``environ``."""
    given: str | None = environ.get("HTTP_X_REQUEST_ID")
    if given and _WELL_FORMED.match(given):
        return given
    return new_id()
