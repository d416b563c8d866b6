"""One webhook POST, bounded as a whole.

An attempt -- connect, TLS handshake, sending the request, reading the whole
answer -- ends by ``svc.webhooks.timeout`` after it began: every send and
every receive gets only the time left of that one deadline, so a receiver
that answers one byte a second cannot stretch an attempt by answering just
inside a per-read timeout.

The connection goes to the address that was checked (webhooks.check_address),
not to a second lookup; redirects are not followed; at most ``MAX_ANSWER``
bytes of an answer are read.
"""
from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from ..errors import BadRequest
from ..jsonio import dumps
from . import webhooks
from .outbox import Event

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MAX_ANSWER = 64 << 10
_TLS = ssl.create_default_context()


class Deadline:
    """The end of one attempt; ``left()`` raises TimeoutError once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole answer within {self.seconds:g} s")
        return left


def post(url: str, secret: str, event: Event, timeout: float,
         allow_private: bool) -> tuple[int | None, str | None]:
    """(status or None, what went wrong or None) of one delivery of ``event``."""
    deadline = Deadline(timeout)
    body = dumps(event).encode()
    try:
        target = webhooks.normalised_url(url)
        destination = webhooks.check_address(target, allow_private)
    except BadRequest as exc:
        return None, str(exc.details)
    parts = urlsplit(target)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {"Content-Type": "application/json", "User-Agent": "restsvc-webhooks",
               "Svc-Event-Id": str(event["id"]),
               "Svc-Signature": webhooks.signature(secret, body, time.time())}
    connection = _Connection(destination, deadline)
    try:
        connection.request("POST", path, body, headers)
        answer = connection.getresponse()
        answer.read(MAX_ANSWER)
        return answer.status, None if answer.status < 300 else f"answered {answer.status}"
    except (OSError, http.client.HTTPException) as exc:     # TimeoutError included
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
        connection.release()


class _Connection(http.client.HTTPConnection):
    """Connects to the address that was checked, whatever the name resolves to
    now, and spends no more than the deadline on the whole exchange."""

    def __init__(self, destination: webhooks.Destination, deadline: Deadline) -> None:
        super().__init__(destination.host, destination.port)
        if destination.scheme == "https":
            self.default_port = 443         # the Host header names no port for 443
        self.scheme = destination.scheme
        self.address = destination.address
        self.deadline = deadline
        self._socket: socket.socket | None = None

    def release(self) -> None:
        """Close the socket (http.client's ``close`` may come before the
        answer is read, as with a socket's own ``makefile``)."""
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.deadline.left())
        try:
            if self.scheme == "https":
                sock.settimeout(self.deadline.left())
                sock = _TLS.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        # http.client only sends, makes a file to read and closes: _Bounded does those.
        self.sock = cast(socket.socket, _Bounded(sock, self.deadline))


class _Bounded:
    """A connected socket whose every send and receive gets only the time left."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._deadline.left())
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        return io.BufferedReader(_Reader(self._sock, self._deadline))

    def close(self) -> None:
        """Nothing yet: the answer may still be read (_Connection.release closes)."""


class _Reader(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        self._sock.settimeout(self._deadline.left())
        return self._sock.recv_into(buffer)
