"""How long a failed sign-in takes, by what was tried (issue 9, point 9).

    python tests/benchmark/signin_timing.py [--runs 15]

Builds the shipped demo on a temporary SQLite database, registers one more
client with a hashed secret at the production cost (200,000 pbkdf2 rounds),
and times failed token requests in process: a wrong secret for the plain and
for the hashed client, an unknown client id; a wrong password for a user, a
disabled user and an unknown username, in turns: the median wall time and
the least CPU time of ``--runs`` requests each (CPU time is what the check
costs; wall time also shows the load of the machine). Within each group the
figures should agree: a difference would tell an attacker which ids or
usernames exist.
"""
import argparse
import base64
import statistics
import sys
import tempfile
import time
from pathlib import Path

from werkzeug.test import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conftest import make_settings  # noqa: E402  (the suite's demo settings)

from restsvc.app import RestApp  # noqa: E402
from restsvc.security import clients  # noqa: E402
from restsvc.security.users import User  # noqa: E402

clients.ITERATIONS = 200_000        # conftest lowers it for the suite; measure production


def basic(client_id, secret):
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def measure(c, runs, attempts):
    """{name: (median wall ms, least CPU ms)}, the attempts taken in turns so
    that other load on the machine does not favour one of them."""
    wall, cpu = {name: [] for name in attempts}, {name: [] for name in attempts}
    for _ in range(runs):
        for name, (form, client_id, secret) in attempts.items():
            start_wall, start_cpu = time.perf_counter(), time.thread_time()
            response = c.post("/oauth2/token", data=form,
                              headers={"Authorization": basic(client_id, secret)})
            wall[name].append(time.perf_counter() - start_wall)
            cpu[name].append(time.thread_time() - start_cpu)
            assert response.status_code in (400, 401), response.get_data(as_text=True)
    return {name: (statistics.median(wall[name]) * 1000, min(cpu[name]) * 1000)
            for name in attempts}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = make_settings(f"sqlite:///{tmp}/bench.db", tmp, {
            "svc.authserver.rate-limit.max-failures": 0,
            "svc.authserver.client.hashed.client-id": "hashed",
            "svc.authserver.client.hashed.client-secret": clients.hash_secret("h")})
        c = Client(RestApp(settings))
        User.update(active=False).where(User.username == "admin").execute()
        grant = {"grant_type": "client_credentials"}
        clients_tried = {"plain secret, wrong": (grant, "demo-client", "wrong"),
                         "hashed secret, wrong": (grant, "hashed", "wrong"),
                         "unknown client id": (grant, "nobody", "wrong")}
        users_tried = {name: ({"grant_type": "password", "username": username,
                               "password": "wrong-pass"}, "demo-client", "demo-secret")
                       for name, username in (("wrong password", "alice"),
                                              ("disabled user", "admin"),
                                              ("unknown username", "nobody"))}
        rows = [("client", measure(c, args.runs, clients_tried)),
                ("user", measure(c, args.runs, users_tried))]
    print(f"{'':8}{'failed attempt':24}{'median wall ms':>16}{'least CPU ms':>14}")
    for group, figures in rows:
        for name, (wall, cpu) in figures.items():
            print(f"{group:8}{name:24}{wall:16.1f}{cpu:14.1f}")

if __name__ == "__main__":
    main()
