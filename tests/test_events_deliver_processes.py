"""``restsvc deliver`` as real processes: killed with SIGKILL in the middle of
a delivery it loses nothing; two of them deliver each event once; a burst of
SIGTERMs stops it at once."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from werkzeug.test import Client

from conftest import bearer, demo_id, get_token
from restsvc.events.delivery import WebhookDelivery
from servers import _write_config
from webhook_support import Receiver

SECRET = "a-webhook-secret-of-some-length"
SETTINGS = {"svc.webhooks.allow-private-addresses": True, "svc.webhooks.timeout": "1s",
            "svc.webhooks.retry-initial-delay": "50ms", "svc.events.poll-interval": "50ms"}


def _deliver(directory, database_url):
    config = _write_config(directory, database_url, {**SETTINGS,
                                                     "svc.datasource.init-schema": False})
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESTSVC_")}
    log = open(directory / f"deliver-{time.monotonic_ns()}.log", "wb")
    return subprocess.Popen([sys.executable, "-m", "restsvc.cli", "--config", str(config),
                             "deliver"], cwd=directory, env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def _stop(process):
    if process.poll() is None:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def hooked(make_app):
    """(client, auth) of an app with a webhook on Customer updates to ``receiver``."""
    def build(receiver):
        c = Client(make_app(SETTINGS))
        auth = bearer(get_token(c))
        response = c.post("/rest/webhooks", headers=auth, json={
            "url": receiver.url, "entities": ["Customer"], "secret": SECRET})
        assert response.status_code == 201, response.json
        return c, auth
    return build


def _renames(client, auth, count, customer=3):
    for n in range(count):
        response = client.put(f"/rest/entities/Customer/{demo_id('customer', customer)}",
                              headers=auth, json={"name": f"Name {n}"})
        assert response.status_code == 200, response.json


def test_a_worker_killed_mid_delivery_loses_nothing(hooked, database_url, tmp_path):
    hold = threading.Event()
    receiver = Receiver(hold=hold)      # the first request is held: in flight
    client, auth = hooked(receiver)
    first = _deliver(tmp_path, database_url)
    second = None
    try:
        _renames(client, auth, 1)
        receiver.wait_for(1)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=20)
        hold.set()
        second = _deliver(tmp_path, database_url)
        receiver.wait_for(2)            # the lease ran out: delivered again, same event
        ids = receiver.ids()
        assert ids[0] == ids[1]
        deadline = time.monotonic() + 30
        while WebhookDelivery.select().count():
            assert time.monotonic() < deadline, "the delivery never completed"
            time.sleep(0.1)
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
        receiver.close()


def test_two_workers_deliver_each_event_once(hooked, database_url, tmp_path):
    if not database_url.startswith("postgresql"):
        pytest.skip("two workers at once on one database: PostgreSQL (SQLite has one writer)")
    receiver = Receiver()
    client, auth = hooked(receiver)
    workers = [_deliver(tmp_path, database_url) for _ in range(2)]
    try:
        _renames(client, auth, 20)
        receiver.wait_for(20)
        deadline = time.monotonic() + 30
        while WebhookDelivery.select().count():
            assert time.monotonic() < deadline, "deliveries left over"
            time.sleep(0.1)
        ids = receiver.ids()
        assert len(ids) == len(set(ids)) == 20
    finally:
        for worker in workers:
            _stop(worker)
        receiver.close()


def _caught_signals(pid):
    """The mask of the signals a process has handlers for."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))


def test_a_burst_of_sigterms_stops_the_delivery_worker_at_once(hooked, database_url, tmp_path):
    receiver = Receiver()
    client, auth = hooked(receiver)
    worker = _deliver(tmp_path, database_url)
    try:
        _renames(client, auth, 1)
        receiver.wait_for(1)            # it is in its loop of passes
        # No Python handler takes SIGTERM (one interrupting code that holds a
        # lock it then wants could wait forever): it is blocked and waited for.
        assert not _caught_signals(worker.pid) & 1 << (signal.SIGTERM - 1)
        for _ in range(500):
            try:
                os.kill(worker.pid, signal.SIGTERM)
            except ProcessLookupError:
                break
        assert worker.wait(timeout=15) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        receiver.close()
