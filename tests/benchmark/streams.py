"""Benchmark (issue 43): many open change-feed streams on one ``restsvc serve``.

    python tests/benchmark/streams.py [--streams 10000] [--writes 100] [--seconds 30]
                                      [--database-url URL] [--clients 2]

One instance of ``restsvc serve`` (2 workers, its stream process) on the demo
data; ``--streams`` open streams in the issue's mix: 1% full access on
Order and Customer (the demo client), 10% a user who sees only their own
orders (bruno: row-level role own-orders; every such stream has the same
rules and session, so they share one row check per batch), 89% readers of
Customer (alice, of tenant north: she sees the even-numbered customers).
The streams are opened by ``--clients`` client processes
(asyncio, raw sockets). Then ``--writes`` writes a second for ``--seconds``
(updates from 4 threads: 1 in 100 of a customer, the others of orders, a
tenth of them bruno's; at 100 writes/s about 21,000 deliveries/s, the
issue's figure),
and measured:

- every subscriber receives every event it may see (counted per kind of stream);
- delivery latency: from a write's answer to the last stream's receipt of
  its event (p50, p99, max; CLOCK_MONOTONIC, shared by the processes);
- the stream process's RSS (VmRSS at the end, VmHWM);
- the database statements of the stream process per second during the
  writes, by what they are for (its SIGUSR1 log line: reading and judging
  events, rechecking tokens, handovers), and its outbox reads per second;
- ``GET /rest/entities/Customer?limit=50`` p99 (requests one after
  another throughout the writes) during the writes with the streams open; before them, the same
  during the same writes with no stream open (the issue's "at most 1.2x its
  p99 with no streams open": what the streams add), and with neither.
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conftest import basic, demo_id                             # noqa: E402
from servers import launch, stop, wait_until_ready              # noqa: E402

BRUNO_CUSTOMER = 1


def _token(server, grant):
    status, body = server.request("POST", "/oauth2/token", grant.encode(), {
        "Authorization": basic("demo-client", "demo-secret"),
        "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, body
    return json.loads(body)["access_token"]


# -- the clients -------------------------------------------------------------------
async def _stream(port, token, entities, kind, received, ready, tries=10):
    query = "&".join(f"entity={name}" for name in entities)
    for attempt in range(tries):        # as an EventSource would, on a refused connection
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
            writer.write(f"GET /rest/events?{query} HTTP/1.1\r\nHost: bench\r\n"
                         f"Authorization: Bearer {token}\r\n\r\n".encode())
            status = await reader.readline()
            break
        except OSError:
            if attempt == tries - 1:
                raise
            received["retries"] = received.get("retries", 0) + 1
            await asyncio.sleep(1)
    if b" 200 " not in status:
        raise SystemExit(f"stream refused: {status!r} {await reader.read(500)!r}")
    ready.append(1)
    # Only the id lines are read (a C regex over each chunk, not JSON per
    # message): the clients share the server's two cores. One full-access
    # stream per client parses the data too, for the ids' (entityId, version).
    last = received.setdefault("last", {})
    keys = received.setdefault("keys", {}) if kind == "full" and "keys" not in received else None
    rest = b""
    while chunk := await reader.read(1 << 16):
        now = time.monotonic()
        chunk = rest + chunk
        end = chunk.rfind(b"\n\n") + 2
        whole, rest = chunk[:end], chunk[end:]
        ids = _IDS.findall(whole)
        received[kind] = received.get(kind, 0) + len(ids) - whole.count(b"event: ")
        for found in ids:
            if last.get(found, 0) < now:
                last[found] = now
        if keys is not None:
            for data in _DATA.findall(whole):
                event = json.loads(data)
                keys[str(event["id"]).encode()] = (event["entityId"], event["version"])


_IDS = re.compile(rb"^id: (\d+)$", re.MULTILINE)
_DATA = re.compile(rb"^data: (.*)$", re.MULTILINE)


def _client(port, plan, queue, go):
    """One client process: its streams (``plan``: [(token, entities, kind)]);
    when ``go`` is set, puts its counts and last receipts on ``queue``."""
    async def run():
        received, ready = {}, []
        tasks = []
        for token, entities, kind in plan:
            tasks.append(asyncio.create_task(_stream(port, token, entities, kind, received,
                                                     ready)))
            if len(tasks) % 100 == 0:
                await asyncio.sleep(0.1)
        while len(ready) < len(plan):
            await asyncio.sleep(0.1)
            if any(task.done() and task.exception() for task in tasks):
                raise SystemExit(str([task.exception() for task in tasks if task.done()][0]))
        queue.put(("ready", len(ready)))
        while not go.is_set():
            await asyncio.sleep(0.2)
        queue.put(("counts", received))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    asyncio.run(run())


# -- the writers -----------------------------------------------------------------
def _writes(server, per_second, seconds):
    """Write ``per_second`` updates a second for ``seconds`` from 4 threads:
    {(entityId, version): time of the answer}, and how many of each kind."""
    answered, kinds = {}, {"Customer": 0, "Order": 0, "bruno": 0, "north": 0}
    lock = threading.Lock()
    total = per_second * seconds
    start = time.monotonic()
    counter = iter(range(total))
    errors = []

    def work():
        for n in counter:
            time.sleep(max(0.0, start + n / per_second - time.monotonic()))
            if n % 100 == 50:        # one write in 100: a customer (the issue's ~21,000/s)
                number = 3 + n % 17
                key, entity = demo_id("customer", number), "Customer"
                values = {"name": f"Bench {n}"}
            else:
                order = BRUNO_CUSTOMER + 20 * (n // 10 % 3) if n % 10 == 0 else 2 + n % 37
                key, entity = demo_id("order", order), "Order"
                values = {"number": f"B{n:05d}"}
            status, body = server.request("PUT", f"/rest/entities/{entity}/{key}"
                                          "?responseFetchPlan=_base",
                                          json.dumps(values).encode(),
                                          {"Content-Type": "application/json"})
            now = time.monotonic()
            if status != 200:
                errors.append(f"{entity} {key} answered {status}: {body[:300]!r}")
                return
            answer = json.loads(body)
            with lock:
                answered[(key, answer["version"])] = now
                kinds[entity] += 1
                if entity == "Order" and order % 20 == BRUNO_CUSTOMER:
                    kinds["bruno"] += 1
                if entity == "Customer" and number % 2 == 0:
                    kinds["north"] += 1     # alice's tenant's (demo/data.py: even numbers)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit("\n".join(errors[:3]))
    return answered, kinds, time.monotonic() - start


def _list_p99(server, count=200, until=None):
    """p99 of ``count`` lists one after another, or of as many as fit until
    ``until`` (a threading.Event) is set."""
    times = []
    while (len(times) < count) if until is None else not until.is_set():
        started = time.perf_counter()
        status, _ = server.request("GET", "/rest/entities/Customer?limit=50")
        times.append(time.perf_counter() - started)
        assert status == 200
    return statistics.quantiles(times, n=100)[98] * 1000


def _listing(server, writes):
    """p99 of lists made throughout ``writes()``, and its result."""
    done, found = threading.Event(), []
    lister = threading.Thread(target=lambda: found.append(_list_p99(server, until=done)))
    lister.start()
    try:
        result = writes()
    finally:
        done.set()
        lister.join()
    return found[0], result


def _stream_pid(server):
    found = re.findall(r"stream process \(pid (\d+)\) takes streams", server.log())
    return int(found[-1])


def _statements(server, pid):
    os.kill(pid, signal.SIGUSR1)
    time.sleep(0.5)
    lines = re.findall(r"statements: (\{.*?\}); outbox reads: (\d+)", server.log())
    counts, reads = lines[-1]
    return json.loads(counts), int(reads)


def _cpu(server, stream_pid, clients):
    """CPU seconds so far by role: the API's workers (and the delivery worker),
    the stream process, the client processes (which stand for browsers on
    other machines), this script (the writers and the lister)."""
    def seconds(pid):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    master = server.process.pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return {"server": seconds(master) + sum(seconds(int(pid)) for pid in children
                                            if int(pid) != stream_pid),
            "stream process": seconds(stream_pid),
            "clients": sum(seconds(client.pid) for client in clients),
            "script": time.process_time()}


def _used(before, after, took):
    return ", ".join(f"{name} {(after[name] - before[name]) / took:.2f}" for name in after)


def _memory(pid):
    with open(f"/proc/{pid}/status") as f:
        found = dict(line.split(":", 1) for line in f if line.startswith(("VmRSS", "VmHWM")))
    return {name: int(value.split()[0]) / 1024 for name, value in found.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=100, help="writes a second")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--poll-interval", default="500ms")
    parser.add_argument("--stream-poll-interval", default="100ms",
                        help="the streams' reader's interval (PostgreSQL: also woken by NOTIFY)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        url = args.database_url or f"sqlite:///{workdir}/bench.db"
        server = wait_until_ready(launch(Path(workdir), url, {
            "svc.events.streams-in-serve": True, "svc.events.poll-interval": args.poll_interval,
            "svc.events.stream-poll-interval": args.stream_poll_interval,
            "svc.events.max-streams": args.streams + 100,
            "svc.events.max-stream-share-per-caller": "100%"}, workers=2))
        try:
            _run(server, args)
        finally:
            stop(server)


def _run(server, args):
    time.sleep(2)
    pid = _stream_pid(server)
    quiet_p99 = _list_p99(server)
    # the same writes with no stream open: what the streams add
    cpu = _cpu(server, pid, [])
    writing_p99, (_, _, took) = _listing(
        server, lambda: _writes(server, args.writes, args.seconds))
    print("CPU (cores) during the writes without streams: " + _used(cpu, _cpu(server, pid, []),
                                                                    took))
    full = server.token
    bruno = _token(server, "grant_type=password&username=bruno&password=bruno-password")
    alice = _token(server, "grant_type=password&username=alice&password=alice-password")
    mix = ([(full, ("Order", "Customer"), "full")] * max(1, args.streams // 100)
           + [(bruno, ("Order",), "own")] * (args.streams // 10))
    mix += [(alice, ("Customer",), "customer")] * (args.streams - len(mix))
    plans = [mix[n::args.clients] for n in range(args.clients)]
    queue, go = multiprocessing.Queue(), multiprocessing.Event()
    clients = [multiprocessing.Process(target=_client, args=(server.port, plan, queue, go))
               for plan in plans]
    opening = time.monotonic()
    for client in clients:
        client.start()
    for _ in clients:
        kind, _count = queue.get(timeout=600)
    opened = time.monotonic() - opening
    print(f"{len(mix)} streams open in {opened:.1f} s; stream process {_memory(pid)} MiB")
    before, reads_before = _statements(server, pid)
    cpu = _cpu(server, pid, clients)
    load_p99, (answered, kinds, took) = _listing(
        server, lambda: _writes(server, args.writes, args.seconds))
    print("CPU (cores) during the writes with the streams: "
          + _used(cpu, _cpu(server, pid, clients), took))
    after, reads_after = _statements(server, pid)
    time.sleep(3)           # the last deliveries
    memory = _memory(pid)
    go.set()
    counts, last, keys = {}, {}, {}
    for _ in clients:
        _, received = queue.get(timeout=120)
        for kind, value in received.items():
            if kind == "retries":
                print(f"connections retried: {value}")
            elif kind == "last":
                for key, when in value.items():
                    last[key] = max(last.get(key, 0), when)
            elif kind == "keys":
                keys.update(value)
            else:
                counts[kind] = counts.get(kind, 0) + value
    for client in clients:
        client.join(timeout=30)
    per_kind = {"full": sum(1 for _, _, k in mix if k == "full"),
                "own": sum(1 for _, _, k in mix if k == "own"),
                "customer": sum(1 for _, _, k in mix if k == "customer")}
    expected = {"full": per_kind["full"] * (kinds["Customer"] + kinds["Order"]),
                "own": per_kind["own"] * kinds["bruno"],
                "customer": per_kind["customer"] * kinds["north"]}
    last = {keys[found]: when for found, when in last.items() if found in keys}
    latencies = sorted(last[key] - when for key, when in answered.items() if key in last)
    missing = sum(1 for key in answered if key not in last)
    statements = {name: (after.get(name, 0) - before.get(name, 0)) / took
                  for name in set(after) | set(before)}
    deliveries = sum(counts.values())
    print(f"writes: {len(answered)} in {took:.1f} s ({len(answered) / took:.0f}/s): {kinds}")
    print(f"deliveries: {deliveries} ({deliveries / took:.0f}/s); received {counts}, "
          f"expected {expected}; writes never delivered: {missing}")
    if latencies:
        print(f"latency write answer -> last delivery: p50 "
              f"{statistics.median(latencies) * 1000:.0f} ms, p99 "
              f"{latencies[int(len(latencies) * 0.99) - 1] * 1000:.0f} ms, "
              f"max {latencies[-1] * 1000:.0f} ms")
    print(f"stream process: {memory} MiB")
    print("stream process statements/s: "
          + ", ".join(f"{name} {value:.1f}" for name, value in sorted(statements.items()))
          + f"; outbox reads/s {(reads_after - reads_before) / took:.1f}")
    print(f"list p99: {quiet_p99:.1f} ms with neither writes nor streams, "
          f"{writing_p99:.1f} ms under the writes without streams, "
          f"{load_p99:.1f} ms under the writes with the streams "
          f"({load_p99 / writing_p99:.2f}x)")


if __name__ == "__main__":
    main()
