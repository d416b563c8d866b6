"""PostgreSQL: wake the hub's reader when events are committed (``LISTEN``/``NOTIFY``).

A write that leaves events sends ``NOTIFY restsvc_events`` in its own
transaction (data/write/outbox.py ``insert``): PostgreSQL delivers it at
commit, when the rows are readable, to every connection that listens on the
channel, on every instance sharing the database. ``Listener`` keeps one such
connection per process while it has streams (autocommit, outside the pool), waits on
its socket and wakes the hub (``wake``) at each notification, so a stream
gets an event a pass after its commit instead of up to an interval later.
Should the connection fail, the hub goes on with its interval
(``svc.events.stream-poll-interval``) and the listener connects again after
``RETRY`` seconds. SQLite has no notifications: the hub polls.
"""
from __future__ import annotations

import logging
import select
import threading
from collections.abc import Callable
from typing import Any

import peewee

from ..db import is_sqlite
from ..data.write.outbox import CHANNEL

log = logging.getLogger("restsvc.events")
RETRY = 5.0         # seconds between two attempts to listen again


class Listener:
    """The listening connection of one process and its thread (``start``)."""

    def __init__(self, database: peewee.Database, wake: Callable[[], None]) -> None:
        self.database = database
        self.wake = wake
        self.listening = False      # whether notifications wake the hub now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Listen from now on (PostgreSQL; nothing on SQLite) until ``stop``."""
        if is_sqlite(self.database) or self._thread is not None:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                        name="restsvc-event-listen", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No more listening (the hub has no stream left): the connection
        closes within ``RETRY`` seconds."""
        self._stop.set()
        self._thread = None

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self._listen(stop)
            except Exception:       # noqa: BLE001 -- the interval serves meanwhile
                log.warning("listening for committed events failed; the change feed "
                            "polls until it listens again", exc_info=True)
            self.listening = False
            stop.wait(RETRY)

    def _listen(self, stop: threading.Event) -> None:
        import psycopg2
        conn: Any = psycopg2.connect(database=self.database.database,
                                     **self.database.connect_params)
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(f"LISTEN {CHANNEL}")
            self.listening = True
            self.wake()             # what was committed before it listened
            while not stop.is_set():
                readable, _, _ = select.select([conn], [], [], RETRY)
                conn.poll()         # raises when the connection is gone
                if conn.notifies:
                    conn.notifies.clear()
                    self.wake()
                elif not readable:
                    with conn.cursor() as cursor:   # an idle server: is it still there?
                        cursor.execute("SELECT 1")
        finally:
            conn.close()
