"""How long a failed sign-in takes, by what was tried (issue 9, point 9).

    python tests/benchmark/signin_timing.py [--runs 15]

Builds the shipped demo on a temporary SQLite database, registers one more
client with a hashed secret at the production cost (200,000 pbkdf2 rounds),
and times failed token requests in process: a wrong secret for the plain and
for the hashed client, an unknown client id; a wrong password for a user, a
disabled user and an unknown username. Each figure is the median of ``--runs``
requests. Within each group the figures should agree: a difference would tell
an attacker which ids or usernames exist.
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


def median_ms(c, runs, form, client_id, secret):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = c.post("/oauth2/token", data=form,
                          headers={"Authorization": basic(client_id, secret)})
        times.append(time.perf_counter() - start)
        assert response.status_code in (400, 401), response.get_data(as_text=True)
    return statistics.median(times) * 1000


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
        rows = [("client", name, median_ms(c, args.runs, grant, client_id, "wrong"))
                for name, client_id in (("plain secret, wrong", "demo-client"),
                                        ("hashed secret, wrong", "hashed"),
                                        ("unknown client id", "nobody"))]
        for name, username in (("wrong password", "alice"), ("disabled user", "admin"),
                               ("unknown username", "nobody")):
            form = {"grant_type": "password", "username": username, "password": "wrong-pass"}
            rows.append(("user", name, median_ms(c, args.runs, form, "demo-client", "demo-secret")))
    print(f"{'':8}{'failed attempt':24}{'median ms':>10}")
    for group, name, ms in rows:
        print(f"{group:8}{name:24}{ms:10.1f}")


if __name__ == "__main__":
    main()
