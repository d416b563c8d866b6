"""What the request limits (restsvc/docs/operations.md "Limits") cost an attacker and a user:

    python tests/benchmark/limits.py [--lines 30]

In process, on a fresh SQLite demo database: one order with ``--lines`` lines
read along inline plans that walk the composition back and forth (lines ->
order -> lines ...) at growing depths, next to the named plan
order-with-details; then a bulk create of 400,000 customers. Prints status,
answer size and time of each request.
"""
import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from werkzeug.test import Client  # noqa: E402

from conftest import demo_id, get_token, make_settings  # noqa: E402
from restsvc.app import RestApp  # noqa: E402


def back_and_forth(levels):
    plan = "_local"
    for level in range(levels, 0, -1):
        plan = {"properties": ["id", {"name": "lines" if level % 2 else "order", "fetchPlan": plan}]}
    return json.dumps({"entity": "Order", **plan})


def timed(label, call):
    start = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - start) * 1000
    error = "" if response.status_code < 300 else response.json.get("error", "")
    print(f"{label:<34} {response.status_code}  {len(response.get_data()):>10,} bytes  "
          f"{elapsed:>8.0f} ms  {error}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=30)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="restsvc-limits-"))
    try:
        app = RestApp(make_settings(f"sqlite:///{directory}/limits.db", directory,
                                    {"svc.demo-data": True}))
        client = Client(app)
        auth = {"Authorization": f"Bearer {get_token(client)}"}
        lines = [{"product": {"id": demo_id("product", i % 10)}, "quantity": 1}
                 for i in range(args.lines)]
        order = client.post("/rest/entities/Order", headers=auth, json={
            "number": "BENCH", "date": "2025-01-01", "customer": {"id": demo_id("customer", 0)},
            "lines": lines}).json["id"]
        path = f"/rest/entities/Order/{order}"
        timed("order-with-details", lambda: client.get(
            path, query_string={"fetchPlan": "order-with-details"}, headers=auth))
        for levels in range(2, 9):
            timed(f"lines/order back and forth, {levels} levels", lambda: client.get(
                path, query_string={"fetchPlan": back_and_forth(levels)}, headers=auth))  # noqa: B023 (run at once)
        bodies = [{"name": f"bulk {i}"} for i in range(400_000)]
        timed("bulk create of 400,000 customers", lambda: client.post(
            "/rest/entities/Customer", json=bodies, headers=auth))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
