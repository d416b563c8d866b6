"""``restsvc serve``'s stream process (restsvc/events/streamproc.py): its
supervisor and private socket directory in the master, its work in the child."""
import argparse
import json
import logging
import math
import os
import shutil
import signal
import tempfile
from collections import Counter
from collections.abc import Callable

import peewee

from .statements import observe_statements
from .clibase import app_of
from .events.hub import Hub
from .events import streamproc
from .events.supervisor import DeliverySupervisor

log = logging.getLogger("restsvc")


def stream_process(args: argparse.Namespace) -> DeliverySupervisor:
    """The supervisor of the stream process (events/streamproc.py), and the
    private directory of its socket (set before the workers fork: they hand
    streams over to it there)."""
    directory = tempfile.mkdtemp(prefix="restsvc-streams-")        # 0700
    streamproc.address = os.path.join(directory, "streams.sock")
    streamproc.owner = os.getpid()
    return DeliverySupervisor(lambda master: streams_command(args, master),
                              grace=streamproc.STOP_GRACE + 3, log=log,
                              name="stream process")


def stream_process_gone() -> None:
    """The stream process's directory removed (by the master, once)."""
    path = streamproc.address
    if path is not None and os.getpid() == streamproc.owner:
        streamproc.address = None
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def streams_command(args: argparse.Namespace, master: int) -> int:
    """The stream process's work: every stream the workers hand over, on one loop."""
    from .api.events import reopened
    from .events.feed import StreamSlots
    address = streamproc.address
    app = app_of(args)
    settings = app.settings
    slots = StreamSlots(settings.events_max_streams_instance, settings.events_caller_share)
    # The restsvc_event_streams gauge counts the streams held here too: the
    # worker's count of a stream it handed over ends with its answer.
    gauge = None if app.instruments is None else app.instruments.event_streams
    server = streamproc.StreamServer(app.event_hub, lambda message: reopened(app, message),
                                     slots, settings.events_keepalive,
                                     (lambda change: None) if gauge is None else gauge.inc_by)
    if address is None:
        return 1
    _count_statements(app.event_hub, app.database)
    return server.run(address, parent=master)


def _count_statements(hub: Hub, database: peewee.Database) -> None:
    """Count the process's statements by what they are for (``Hub.doing``);
    SIGUSR1 logs the counts (tests/benchmark/streams.py reads them)."""
    counts: Counter[str] = Counter()
    record: Callable[[float], None] | None = getattr(database, "_record", None)
    slow: float | None = getattr(database, "_slow", None)

    def counted(seconds: float) -> None:
        counts[hub.doing()] += 1
        if record is not None:
            record(seconds)
    observe_statements(database, counted, slow if slow != math.inf else None)
    signal.signal(signal.SIGUSR1, lambda sig, frame: log.info(
        "stream process (pid %s) statements: %s; outbox reads: %s; streams: %s", os.getpid(),
        json.dumps(dict(counts)), hub.reads, len(hub)))
