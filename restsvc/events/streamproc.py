"""The stream process: every open change-feed stream of an instance, on one event loop.

``restsvc serve`` starts it beside the gunicorn master (supervisor.py, as
the webhook delivery worker: started again when it dies) and listens for
it on a unix socket in a directory of its own (0700; the socket 0600).

How a stream reaches it: a worker answers ``GET /rest/events`` as any
request up to the point where the stream would begin (authentication,
permissions, the filter compiled, ``Last-Event-ID`` read, the caps), then
hands the client's connection over (``hand_over``): the socket's file
descriptor (``SCM_RIGHTS``) with the response's head and what the process
needs to rebuild the caller (the ``Authorization`` header or the ticket's
token hash: never logged). The process rebuilds the stream
(``build``: the same checks again, with its own per-instance caps), answers
"taken" or the error the worker then sends, writes the head and the
events itself, and the worker never writes to that connection again. No
second public port, no proxy in front: the client's connection is the one
it opened. When the process is not there (not started yet, restarting, or
a plain ``gunicorn wsgi:app``), the worker keeps the stream in a thread of
its own, through the same hub (hub.py): one way to decide what a
subscriber sees.

Its loop writes; the hub's reader thread reads the outbox once per interval
for every stream and wakes the loop for the streams it handed messages. A
connection that cannot take more (its transport's buffer full) is not
read for until it drains; its subscriber's buffer fills meanwhile and cuts
it (``event: reset``), the others go on.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import ApiError
from .feed import StreamSlots
from .hub import Hub, Subscriber

log = logging.getLogger("restsvc.events")
MESSAGE = 1 << 16       # the largest handover message
LINGER = 30.0           # seconds an ended stream's client has to read what is left
STOP_GRACE = 2.0        # seconds the process gives its streams to flush when it stops
WRITE_BUFFER = 16 << 10     # bytes a connection's transport holds before it stops taking more
SEND_BUFFER = 64 << 10      # the kernel's send buffer of a stream's socket (not grown by Linux)
Build = Callable[[dict[str, Any]], tuple[Subscriber, bytes, str | None]]

address: str | None = None      # the process's socket, set in the master before workers fork
owner = os.getpid()             # the master (where it is set): only it removes the directory


def hand_over(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any] | None:
    """Give the connection ``sock`` to the stream process with ``message``:
    its answer ({"taken": true} or an error's {"status", "error", "details",
    "headers"}), None when no process took it (none there)."""
    if address is None:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as channel:
            channel.settimeout(10)
            channel.connect(address)
            socket.send_fds(channel, [json.dumps(message).encode()], [sock.fileno()])
            answer = channel.recv(MESSAGE)
    except OSError:
        return None
    try:
        found = json.loads(answer) if answer else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def forget(sock: socket.socket) -> None:
    """Make ``sock``'s descriptor a dead socket: what the worker still writes
    to it fails quietly (EPIPE), and closing it leaves the connection, now
    held by the stream process, open."""
    dead, peer = socket.socketpair()
    peer.close()
    os.dup2(dead.fileno(), sock.fileno())
    dead.close()


class _Connection(asyncio.Protocol):
    """One stream's connection: written as its subscriber's messages come."""

    def __init__(self, server: StreamServer, sub: Subscriber, opening: bytes,
                 caller: str | None) -> None:
        self.server, self.sub, self.opening, self.caller = server, sub, opening, caller
        self.transport: asyncio.Transport | None = None
        self.paused = self.closed = self.finished = False
        self.quiet_since = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_BUFFER)
        transport.write(self.opening)
        self.sub.wake = lambda: self.server.ready(self)
        self.server.connections.add(self)
        self.server.count(1)
        self.server.hub.subscribe(self.sub)

    def pump(self) -> None:
        transport = self.transport
        if transport is None or self.closed or self.finished:
            return
        if self.paused and not self.sub.ended:
            return              # its buffer fills; the hub cuts it when it is full
        chunk, last = self.sub.take()
        if chunk:
            transport.write(chunk)
            self.quiet_since = time.monotonic()
        if last is not None:
            if last:
                transport.write(last)
            self.finish()

    def keepalive(self, now: float, every: float) -> None:
        if self.transport is not None and not (self.paused or self.closed or self.finished) \
                and now - self.quiet_since >= every:
            self.quiet_since = now
            self.transport.write(b": keepalive\n\n")

    def finish(self) -> None:
        """End the stream: what is written is flushed, then the connection closed
        (cut after ``LINGER`` when the client does not read it)."""
        self.finished = True
        self.server.hub.unsubscribe(self.sub)
        if self.transport is not None:
            transport = self.transport
            transport.close()
            self.server.loop.call_later(LINGER, transport.abort)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self.pump()

    def data_received(self, data: bytes) -> None:
        pass            # nothing more is read from a client of a stream

    def eof_received(self) -> bool:
        return False    # the client is gone: close

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed:
            self.closed = True
            self.server.hub.unsubscribe(self.sub)
            if self in self.server.connections:
                self.server.connections.discard(self)
                self.server.count(-1)
            self.server.slots.give(self.caller)


class StreamServer:
    """The loop, the handover socket it listens on, the streams it holds."""

    def __init__(self, hub: Hub, build: Build, slots: StreamSlots, keepalive: float,
                 count: Callable[[int], None] = lambda change: None) -> None:
        self.hub, self.build, self.slots, self.keepalive_every = hub, build, slots, keepalive
        self.count = count      # the streams it holds went up or down by one (a gauge)
        self.loop = asyncio.new_event_loop()
        self.connections: set[_Connection] = set()
        self.stopping = False
        self._ready: list[_Connection] = []     # to pump: the hub handed them messages
        self._ready_lock = threading.Lock()
        self._handlers = ThreadPoolExecutor(4, thread_name_prefix="restsvc-stream-handover")

    def run(self, path: str, parent: int | None = None) -> int:
        _more_files()
        listener = _listen(path)
        log.info("stream process (pid %s) takes streams", os.getpid())
        threading.Thread(target=self._accept, args=(listener,), daemon=True,
                         name="restsvc-stream-accept").start()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            self.loop.add_signal_handler(sig, self.stop)
        self.loop.call_soon(self._tick, parent)
        try:
            self.loop.run_forever()
        finally:
            listener.close()
            self._handlers.shutdown(wait=False, cancel_futures=True)
        return 0

    def ready(self, connection: _Connection) -> None:
        """``connection`` has messages (called by the hub's thread): pumped on
        the loop, with the others of the same pass, after one wake-up."""
        with self._ready_lock:
            first = not self._ready
            self._ready.append(connection)
        if first:
            self.loop.call_soon_threadsafe(self._pump_ready)

    def _pump_ready(self) -> None:
        with self._ready_lock:
            ready, self._ready = self._ready, []
        for connection in ready:
            connection.pump()

    def stop(self) -> None:
        """End every stream (the clients reconnect, elsewhere), then exit."""
        if self.stopping:
            return
        self.stopping = True
        self.hub.end_all()
        deadline = time.monotonic() + STOP_GRACE

        def done() -> None:
            if self.connections and time.monotonic() < deadline:
                self.loop.call_later(0.05, done)
            else:
                self.loop.stop()
        self.loop.call_soon(done)

    def _tick(self, parent: int | None) -> None:
        """Keepalives, and the end when the master is gone or the drain began."""
        now = time.monotonic()
        for connection in list(self.connections):
            connection.keepalive(now, self.keepalive_every)
        if (parent is not None and os.getppid() != parent) or self.hub.closing():
            self.stop()
        if not self.stopping:
            self.loop.call_later(0.5, self._tick, parent)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                channel, _ = listener.accept()
            except OSError:
                return
            self._handlers.submit(self._take, channel)

    def _take(self, channel: socket.socket) -> None:
        """One handover: the stream rebuilt and answered for, then given to the loop."""
        fds: list[int] = []
        with channel:
            try:
                channel.settimeout(10)
                received = socket.recv_fds(channel, MESSAGE, 1)
                fds = received[1]
                message = json.loads(received[0])
                if self.stopping or len(fds) != 1 or not isinstance(message, dict):
                    raise ApiError("Service unavailable", "The instance is stopping; "
                                   "retry shortly", status=503, headers={"Retry-After": "1"})
                sub, opening, caller = self.build(message)
                self.slots.take(caller)
            except ApiError as error:
                for fd in fds:
                    os.close(fd)
                _answer(channel, {"status": error.status, "error": error.error,
                                  "details": error.details, "headers": error.headers or {}})
                return
            except Exception:       # noqa: BLE001 -- the worker keeps the stream then
                for fd in fds:
                    os.close(fd)
                return
            sock = socket.socket(fileno=fds[0])
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            _answer(channel, {"taken": True})
        asyncio.run_coroutine_threadsafe(self._open(sock, sub, opening, caller), self.loop)

    async def _open(self, sock: socket.socket, sub: Subscriber, opening: bytes,
                    caller: str | None) -> None:
        try:
            await self.loop.connect_accepted_socket(
                lambda: _Connection(self, sub, opening, caller), sock)
        except OSError:
            self.slots.give(caller)
            sock.close()


def _answer(channel: socket.socket, answer: dict[str, Any]) -> None:
    try:
        channel.sendall(json.dumps(answer).encode())
    except OSError:
        pass


def _listen(path: str) -> socket.socket:
    if os.path.exists(path):
        os.unlink(path)         # a process before this one left it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(256)
    return listener


def _more_files() -> None:
    """As many open files as the system lets this process have: a stream is one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY
                                                        else max(soft, 65536), hard))
        except (ValueError, OSError):
            pass
