"""Benchmark (issue 43, webhook delivery keeps up): how fast the delivery
worker empties a backlog of one subscription to a receiver that answers at once.

    python tests/benchmark/delivery.py [--events 3000] [--database-url URL]

Writes ``--events`` updates of a demo customer (each a change event) with
one webhook subscription for them registered first, to a receiver on this
machine (tests/webhook_support.py: a threaded HTTP server answering 200 at
once), then runs the delivery worker's loop (``Deliverer.run``, as
``restsvc deliver`` does) on a thread until every event has been received.
Printed: events per second of wall time and CPU ms of this process per
event (the receiver and the worker share the process), and whether every
event arrived once and in order.
"""
import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from dataset import prepare                     # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--database-url", help="default: SQLite in a temporary directory")
    args = parser.parse_args()
    import dataclasses
    import json

    from werkzeug.test import Client

    from restsvc.events import webhooks
    from restsvc.events.webhooks import Registration

    from restsvc.events.delivery import Deliverer, WebhookDelivery
    from webhook_support import Receiver
    with tempfile.TemporaryDirectory() as workdir:
        app, env, token, ids = prepare(Path(workdir), args.database_url)
        settings = dataclasses.replace(app.settings, webhooks_allow_private=True)
        client, auth = Client(app), {"Authorization": f"Bearer {token}"}
        receiver = Receiver()          # on 127.0.0.1: the worker's settings allow it
        webhooks.create(app.database, Registration(receiver.url, ["Customer"], ["UPDATE"],
                                                   "a-webhook-secret-of-some-length", None))
        for n in range(args.events):
            answer = client.put(f"/rest/entities/Customer/{ids[0]}", headers=auth,
                                json={"name": f"Delivered {n}"})
            assert answer.status_code == 200, answer.text
        stop = threading.Event()
        worker = threading.Thread(target=Deliverer(settings, app.database, app.metadata).run,
                                  args=(stop,))
        started, cpu = time.perf_counter(), time.process_time()
        worker.start()
        while len(receiver.received) < args.events:
            time.sleep(0.005)
            if time.perf_counter() - started > 600:
                raise SystemExit(f"only {len(receiver.received)} delivered in 600 s")
        wall, spent = time.perf_counter() - started, time.process_time() - cpu
        stop.set()
        worker.join()
        ids_seen = [int(json.loads(body)["id"]) for _, body in receiver.received]
        receiver.close()
        left = WebhookDelivery.select().count()
        kind = "PostgreSQL" if args.database_url else "SQLite"
        print(f"{kind}: {args.events} events to one subscription: {args.events / wall:,.0f} "
              f"events/s ({wall:.2f} s), CPU {spent / args.events * 1e3:.2f} ms per event; "
              f"once each: {len(set(ids_seen)) == len(ids_seen) == args.events}, in order: "
              f"{ids_seen == sorted(ids_seen)}, delivery rows left: {left}")


if __name__ == "__main__":
    main()
