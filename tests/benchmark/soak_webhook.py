"""The soak's webhook part (``soak.py --webhook``, issue 43): a receiver on
this machine that answers 200 at once, one subscription registered through
``POST /rest/webhooks``, ``restsvc deliver`` beside gunicorn, and the time
from each write's answer to the delivery of its event.

The receiver is a process of its own (``python soak_webhook.py receive
FILE``), so the load generator's threads never hold up its answers: a
ThreadingHTTPServer that appends, per delivery, its receipt time
(``time.monotonic()``, one clock for every process of the machine) and the
event's body to FILE, then answers 200.
"""
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from servers import _cpu_seconds, stop_server

SECRET = "soak-webhook-secret-0123456789"


def receive(path):
    """The receiver process: prints its port, then records until killed."""
    lock = threading.Lock()
    out = open(path, "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received = time.monotonic()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            with lock:
                out.write(f"{received:.6f} {body.decode()}\n")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def config_allowing_private(source, workdir):
    """A copy of the settings folder ``source`` (relative paths keep working)
    with ``svc.webhooks.allow-private-addresses: true``, for a receiver on 127.0.0.1."""
    target = workdir / "config"
    shutil.copytree(source, target)
    settings = target / "restsvc.yaml"
    settings.write_text(settings.read_text() + "\nsvc.webhooks.allow-private-addresses: true\n")
    return settings


class Webhook:
    """The receiver process, the delivery worker, and what they record."""

    def __init__(self, workdir, env, log):
        self.workdir, self.log = workdir, log
        self.deliveries = workdir / "deliveries.txt"
        self.deliveries.touch()
        self.receiver = subprocess.Popen([sys.executable, __file__, "receive", str(self.deliveries)],
                                         stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.receiver.stdout.readline().strip()}/soak"
        with open(log, "w") as out:     # restsvc deliver, as the docs say beside a gunicorn by hand
            self.worker = subprocess.Popen(
                [sys.executable, "-c", "import sys; from restsvc.cli import main; sys.exit(main())",
                 "deliver"], cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.answers = []           # (answered at, entityId, version) of each committed write
        self.loads = []             # (seconds from the start, 1-minute load average)
        self._read, self._offset = [], 0

    def subscribe(self, request, base, token):
        status, body = request(base, "POST", "/rest/webhooks", token,
                               {"url": self.url, "entities": ["Customer"], "secret": SECRET})
        if status != 201:
            raise SystemExit(f"the subscription was refused: {status} {body}")

    def events(self):
        """The Customer events committed so far (the outbox, read beside the server)."""
        with sqlite3.connect(f"file:{self.workdir / 'restsvc.db'}?mode=ro", uri=True,
                             timeout=30) as db:
            return db.execute("SELECT count(*) FROM restsvc_event WHERE entity = 'Customer'"
                              ).fetchone()[0]

    def received(self):
        """[(receipt time, event)] so far (lines appended since the last call are read)."""
        with open(self.deliveries) as f:
            f.seek(self._offset)
            text = f.read()
        complete = text[:text.rfind("\n") + 1]
        self._offset += len(complete.encode())
        for line in complete.splitlines():
            moment, body = line.split(" ", 1)
            self._read.append((float(moment), json.loads(body)))
        return self._read

    def drain(self, ended, limit):
        """Wait (up to ``limit`` s) until every answered write's event came;
        the seconds from ``ended`` to the last of them first arriving, or None."""
        wanted = {(entity_id, version) for _, entity_id, version in self.answers}
        while True:
            first = {}
            for moment, event in self.received():
                first.setdefault((event["entityId"], event["version"]), moment)
            if wanted <= first.keys():
                return max(0.0, max((first[key] for key in wanted), default=ended) - ended)
            if time.monotonic() - ended > limit:
                return None
            time.sleep(0.5)

    def watch_load(self, started, stop):
        """The 1-minute load average at the start of each minute of the load."""
        minute = 0
        while not stop.is_set():
            self.loads.append((minute, os.getloadavg()[0]))
            minute += 1
            stop.wait(max(0, started + 60 * minute - time.monotonic()))

    def cpu(self):
        return {"delivery worker": _cpu_seconds(self.worker.pid),
                "receiver": _cpu_seconds(self.receiver.pid)}

    def close(self):
        for proc in (self.worker, self.receiver):
            stop_server(proc)


def report(webhook, started, ended, drained, limit, committed, cpu, percentile):
    """Print the per-minute latencies and the totals; whether the issue's target is met."""
    deliveries = webhook.received()
    first = {}                  # (entityId, version) -> first receipt time
    times = collections.Counter()
    for moment, event in deliveries:
        times[event["id"]] += 1
        first.setdefault((event["entityId"], event["version"]), moment)
    minutes = collections.defaultdict(list)
    missing = collections.Counter()
    for answered, entity_id, version in webhook.answers:
        minute = int((answered - started) // 60)
        got = first.get((entity_id, version))
        if got is None:
            missing[minute] += 1
        else:
            minutes[minute].append(got - answered)
    loads = dict(webhook.loads)
    print("webhook latency, answer -> receipt, by the answer's minute (s):")
    print("minute  writes  delivered    p50    p99    max  undelivered  load")
    ok = True
    for minute in sorted(set(minutes) | set(missing)):
        latencies = minutes[minute]
        p99 = percentile(latencies, .99)
        ok &= p99 < 5 and not missing[minute]
        print(f"{minute:6d} {len(latencies) + missing[minute]:7d} {len(latencies):10d} "
              f"{percentile(latencies, .5):6.2f} {p99:6.2f} {max(latencies, default=0):6.2f} "
              f"{missing[minute]:12d}  {loads.get(minute, float('nan')):.1f}")
    everything = [latency for values in minutes.values() for latency in values]
    twice = sum(1 for count in times.values() if count > 1)
    unanswered = len(set(first) - {(e, v) for _, e, v in webhook.answers})
    print(f"events committed (outbox, Customer): {committed}; writes answered: "
          f"{len(webhook.answers)}; events delivered: {len(times)} in {len(deliveries)} "
          f"deliveries; delivered twice or more: {twice}; never delivered: "
          f"{sum(missing.values())}; delivered without an answer seen: {unanswered}")
    print(f"all: p50 {percentile(everything, .5):.2f} s, p99 {percentile(everything, .99):.2f} s, "
          f"max {max(everything, default=0):.2f} s; backlog empty "
          + (f"{drained:.1f} s after the load's end" if drained is not None
             else f"not in {limit:.0f} s after the load's end")
          + f"; last receipt {max((m for m, _ in deliveries), default=ended) - ended:.1f} s "
          f"after the end")
    print("CPU seconds: " + ", ".join(f"{name} {seconds:.0f}" for name, seconds in cpu.items()
                                       if seconds is not None))
    slow = [float(ms) for ms in re.findall(r"slow statement \(([\d.]+) ms\)",
                                           webhook.log.read_text(errors="replace"))]
    print(f"the delivery worker's statements over 500 ms: {len(slow)}"
          + (f", the longest {max(slow):.0f} ms" if slow else ""))
    return ok and drained is not None and not twice and committed == len(times)


if __name__ == "__main__" and sys.argv[1:2] == ["receive"]:
    receive(sys.argv[2])
