"""Observability's cost under gunicorn, as the worker's CPU time per request
(what bounds req/s at saturation; unlike wall-clock req/s, it does not move
with the other load of a shared machine).

    python tests/benchmark/observability_server.py [--rounds 21] [--requests 1000]
        [--without metrics|lines]

Two servers on copies of one database, one worker each: all off, and metrics
plus JSON request lines on (to a file). Keep-alive requests from this
process; each round reads the worker's CPU time before and after (the sum of
its threads' run time in nanoseconds, ``/proc/PID/task/*/schedstat``: the
request threads and the one that adds records up and writes the lines);
the servers take turns; the median of the per-round ratios, its quartiles,
and the ratio of the totals.
"""
import argparse
import http.client
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from dataset import copy_database, prepare  # noqa: E402
from servers import launch, stop, wait_until_ready  # noqa: E402  (tests/servers.py)

OFF = {"svc.metrics.path": "", "svc.log.requests": False, "svc.log.slow-statement": "0"}
ON = {"svc.metrics.path": "/metrics", "svc.log.format": "json", "svc.log.requests": True,
      "svc.log.slow-statement": "0"}


def worker_cpu(server):
    """Seconds of CPU of the worker's threads (gthread's threads live as long
    as the worker; one that ended would take its time along)."""
    (pid,) = server.worker_pids()
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            continue
    return total / 1e9


def run(server, paths, count):
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    headers = server.auth()
    before = worker_cpu(server)
    for i in range(count):
        conn.request("GET", paths[i % len(paths)], headers=headers)
        response = conn.getresponse()
        response.read()
        assert response.status == 200, response.status
    after = worker_cpu(server)
    conn.close()
    return (after - before) / count * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--without", choices=("metrics", "lines"),
                        help="leave metrics or the request lines off in the 'on' server")
    args = parser.parse_args()
    if args.without == "metrics":
        ON["svc.metrics.path"] = ""
    elif args.without == "lines":
        ON["svc.log.requests"] = False
    workdir = Path(tempfile.mkdtemp(prefix="restsvc-obs-server-"))
    app, _, _, ids = prepare(workdir / "source")
    servers = {}
    for name, overrides in (("off", OFF), ("on", ON)):
        directory = workdir / name
        directory.mkdir()
        copy_database(workdir / "source" / "restsvc.db", directory / "restsvc.db")
        servers[name] = launch(directory, f"sqlite:///{directory / 'restsvc.db'}",
                               {**overrides, "svc.datasource.sqlite-synchronous": "full"})
    try:
        for server in servers.values():
            wait_until_ready(server)
        operations = {"get": [f"/rest/entities/Customer/{i}" for i in ids[:200]],
                      "list": ["/rest/entities/Customer?limit=50"]}
        print(f"{'operation':<10}{'off µs':>10}{'on µs':>10}{'ratio':>8}{'quartiles':>14}"
              f"{'of totals':>11}  (rounds)")
        for name, paths in operations.items():
            for server in servers.values():
                run(server, paths, args.requests // 4)           # warm-up
            figures = {"off": [], "on": []}
            for round_number in range(args.rounds):
                order = ["off", "on"] if round_number % 2 == 0 else ["on", "off"]
                for server_name in order:
                    figures[server_name].append(run(servers[server_name], paths, args.requests))
            ratios = [a / b for a, b in zip(figures["on"], figures["off"])]
            low, _, high = statistics.quantiles(ratios, n=4)
            print(f"{name:<10}{statistics.median(figures['off']):>10.0f}"
                  f"{statistics.median(figures['on']):>10.0f}{statistics.median(ratios):>8.3f}"
                  f"{f'{low:.3f}-{high:.3f}':>14}"
                  f"{sum(figures['on']) / sum(figures['off']):>11.3f}  "
                  f"({min(ratios):.3f}-{max(ratios):.3f})")
    finally:
        for server in servers.values():
            stop(server)


if __name__ == "__main__":
    main()
