"""Benchmark (issue 41): a sustained mixed load on SQLite through gunicorn.

    python tests/benchmark/soak.py [--seconds 300] [--writes 160] [--subscribers 8]
                                   [--readers 40] [--wal-limit 67108864]
                                   [--webhook [--drain 300]]

restsvc under gunicorn with its shipped worker settings (``gunicorn_config``:
2 gthread workers of 16 threads) serves, for ``--seconds``: writer threads
creating demo customers (one in four with an ``Idempotency-Key``) and updating
them, about ``--writes`` a second in all, each a committed change event;
readers listing and getting customers (``--readers`` a second); and
``--subscribers`` change-feed streams (``GET /rest/events``) open throughout,
each polled by the server every 0.5 s. Reported: the WAL file's largest size
(sampled every 20 ms) against the bound, the waits for SQLite's write lock
(each BEGIN IMMEDIATE and each write outside a transaction, timed in the
workers by ``soak_app.py``) as percentiles, and the answers' statuses.
Targets (issue 41): the WAL under the bound the whole run, no wait over 1 s.
``SOAK_RESTSVC=<directory>`` serves another checkout of restsvc (a "before"
run: there the BEGIN IMMEDIATE alone is timed, there being no queue).

``--webhook`` (issue 43): also one webhook subscription (``POST
/rest/webhooks``, Customer, all kinds) to a receiver on this machine that
answers 200 at once, delivered by ``restsvc deliver`` started beside
gunicorn against the same database and settings (a copy of the settings
with ``svc.webhooks.allow-private-addresses: true``); the writes ask for
``responseFetchPlan=_local`` to learn each event's (entityId, version).
Reported per minute of the answers: the time from a write's answer to its
event's receipt (p50/p99/max; the answer comes right after the commit, so
commit-to-receipt is longer by the answer's travel), and in all: events
committed (the outbox), delivered, delivered twice, never delivered after
waiting up to ``--drain`` seconds for the backlog to empty, and how long
that took. Target (issue 43): every event delivered once, p99 under 5 s
at every minute.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dataset import REPO, prepare                        # noqa: E402
from servers import free_port, stop_server, workers_cpu  # noqa: E402
from soak_webhook import Webhook, config_allowing_private, report  # noqa: E402


def _request(base, method, path, token, body=None, headers=None):
    request = urllib.request.Request(base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except OSError:
        return 0, None


def _paced(rate, stop, action):
    """Run ``action(n)`` about ``rate`` times a second until ``stop``."""
    start, n = time.monotonic(), 0
    while not stop.is_set():
        action(n)
        n += 1
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            stop.wait(delay)


def _writer(base, token, rate, stop, statuses, number, answers=None):
    """``answers``: a list to append (answered at, entityId, version) of each write to."""
    ids = []
    plan = "" if answers is None else "?responseFetchPlan=_local"

    def write(n):
        if ids and n % 3 == 2:
            status, body = _request(base, "PUT", f"/rest/entities/Customer/{ids[n % len(ids)]}"
                                    f"{plan}", token, {"name": f"soak {number} {n} changed"})
        else:
            keyed = {"Idempotency-Key": f"soak-{number}-{n}"} if n % 4 == 0 else None
            status, body = _request(base, "POST", f"/rest/entities/Customer{plan}", token,
                                    {"name": f"soak {number} {n}", "email": f"s{n}@x.org"}, keyed)
            if status == 201:
                ids.append(body["id"])
        if answers is not None and status in (200, 201):
            answers.append((time.monotonic(), body["id"], body["version"]))
        statuses[status] += 1
    _paced(rate, stop, write)


def _reader(base, token, rate, stop, statuses, customer_ids):
    def read(n):
        path = ("/rest/entities/Customer?limit=50" if n % 2 else
                f"/rest/entities/Customer/{customer_ids[n % len(customer_ids)]}")
        statuses[_request(base, "GET", path, token)[0]] += 1
    _paced(rate, stop, read)


def _subscriber(base, token, stop, received):
    request = urllib.request.Request(base + "/rest/events",
                                     headers={"Authorization": f"Bearer {token}"})
    while not stop.is_set():
        try:
            with urllib.request.urlopen(request, timeout=30) as stream:
                for line in stream:
                    if line.startswith(b"data:"):
                        received[0] += 1
                    if stop.is_set():
                        return
        except OSError:
            stop.wait(0.5)


def _watch(wal, stop, sizes):
    while not stop.is_set():
        try:
            sizes.append((time.monotonic(), os.stat(wal).st_size))
        except OSError:
            pass
        stop.wait(0.02)


def _percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--writes", type=float, default=160, help="writes a second in all")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=float, default=40, help="reads a second in all")
    parser.add_argument("--subscribers", type=int, default=8)
    parser.add_argument("--wal-limit", type=int, default=64 << 20, help="bytes")
    parser.add_argument("--webhook", action="store_true",
                        help="also a webhook subscription delivered by restsvc deliver")
    parser.add_argument("--drain", type=float, default=300,
                        help="--webhook: seconds to wait for the backlog after the load")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        workdir = Path(workdir)
        _, env, token, ids = prepare(workdir)
        checkout = Path(os.environ.get("SOAK_RESTSVC", str(REPO)))
        if args.webhook:
            env["RESTSVC_CONFIG"] = str(config_allowing_private(checkout / "config", workdir))
        port = free_port()
        log = workdir / "gunicorn.log"
        command = [sys.executable, "-m", "gunicorn", "-c", "python:restsvc.gunicorn_config",
                   "--log-level", "warning", "-b", f"127.0.0.1:{port}", "soak_app:application"]
        server_env = {**os.environ, **env, "SOAK_OUT": str(workdir),
                      "SOAK_WAL_LIMIT": str(args.wal_limit),
                      "PYTHONPATH": os.pathsep.join([str(HERE), str(checkout),
                                                     os.environ.get("PYTHONPATH", "")])}
        with open(log, "w") as out:
            proc = subprocess.Popen(command, cwd=workdir, env=server_env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        statuses = collections.Counter()
        webhook = Webhook(workdir, server_env, workdir / "deliver.log") if args.webhook else None
        try:
            deadline = time.monotonic() + 30
            while _request(base, "GET", "/health/live", token)[0] != 200:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"the server did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)
            if webhook is not None:
                webhook.subscribe(_request, base, token)
                events_before = webhook.events()
            stop, received, sizes = threading.Event(), [0], []
            threads = [threading.Thread(target=_subscriber, args=(base, token, stop, received))
                       for _ in range(args.subscribers)]
            threads += [threading.Thread(target=_writer, args=(base, token, args.writes / args.writers,
                                                               stop, statuses, i,
                                                               webhook and webhook.answers))
                        for i in range(args.writers)]
            threads += [threading.Thread(target=_reader, args=(base, token, args.readers / 4, stop,
                                                               statuses, ids))
                        for _ in range(4)]
            threads.append(threading.Thread(target=_watch, args=(str(workdir / "restsvc.db-wal"),
                                                                 stop, sizes)))
            started = time.monotonic()
            if webhook is not None:
                threads.append(threading.Thread(target=webhook.watch_load, args=(started, stop)))
            for thread in threads:
                thread.daemon = True
                thread.start()
            stop.wait(args.seconds)
            stop.set()
            ended = time.monotonic()
            elapsed = ended - started
            time.sleep(2.5)             # the workers' last flush of their waits
            if webhook is not None:
                drained = webhook.drain(ended, args.drain)
                committed = webhook.events() - events_before
                cpu = {"gunicorn workers": workers_cpu(proc), **webhook.cpu()}
        finally:
            stop_server(proc)
            if webhook is not None:
                webhook.close()
                log_tail = (workdir / "deliver.log").read_text()[-3000:]
                if log_tail:
                    print(f"restsvc deliver's log (its end):\n{log_tail}")
            if statuses.get(0):
                print(f"{statuses[0]} requests found no server; its log:\n"
                      f"{log.read_text()[-3000:]}")
        waits = [float(line) for path in workdir.glob("waits-*.txt")
                 for line in path.read_text().split()]
        largest = max((size for _, size in sizes), default=0)
        minutes = collections.defaultdict(int)
        for moment, size in sizes:
            minute = max(0, int((moment - started) // 60))
            minutes[minute] = max(minutes[minute], size)
        database = (workdir / "restsvc.db").stat().st_size
        print(f"soak: {elapsed:.0f} s, {args.writers} writers at {args.writes:.0f}/s, "
              f"{args.readers:.0f} reads/s, {args.subscribers} feed subscribers")
        print(f"answers: {dict(sorted(statuses.items()))}; events received by subscribers: "
              f"{received[0]}")
        print(f"WAL: largest {largest / 2**20:.1f} MiB (bound {args.wal_limit / 2**20:.0f} MiB); "
              f"per minute: " + " ".join(f"{minutes[m] / 2**20:.1f}" for m in sorted(minutes))
              + f"; database {database / 2**20:.1f} MiB")
        print(f"write-lock waits: {len(waits)} statements; ms p50 {_percentile(waits, .5):.2f} "
              f"p99 {_percentile(waits, .99):.1f} p99.9 {_percentile(waits, .999):.1f} "
              f"max {max(waits, default=0):.1f}; over 0.5 s: {sum(w > 500 for w in waits)}, "
              f"over 1 s: {sum(w > 1000 for w in waits)}; mean {statistics.fmean(waits or [0]):.2f}")
        ok = largest <= args.wal_limit and max(waits, default=0) <= 1000
        if webhook is not None:
            ok &= report(webhook, started, ended, drained, args.drain, committed, cpu, _percentile)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
