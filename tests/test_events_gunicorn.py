"""The change feed under a real gunicorn: streaming through a socket, a
restart in between (resume loses and repeats nothing), the drain on SIGTERM
ending streams cleanly; the webhook delivery worker beside the master."""
import json
import os
import re
import signal
import time

from conftest import demo_id
from servers import launch, stop, wait_until_ready

CUSTOMER = demo_id("customer", 3)
FAST = {"svc.events.poll-interval": "50ms"}


class Stream:
    def __init__(self, server, last_event_id=None):
        self.conn = server.connection(timeout=60)
        headers = server.auth()
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", "/rest/events?entity=Customer", headers=headers)
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("Content-Type").startswith("text/event-stream")

    def message(self):
        """The next message's fields, or None at the end of the stream."""
        fields = {}
        while True:
            line = self.response.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if not line:
                if fields:
                    return fields
                continue
            name, _, value = line.partition(": ")
            fields[name] = value

    def events(self, count):
        found = []
        while len(found) < count:
            message = self.message()
            assert message is not None, f"the stream ended after {found}"
            if "data" in message:
                found.append(json.loads(message["data"]))
        return found

    def rest(self):
        """Messages until the stream ends (cleanly: a broken one raises)."""
        messages = []
        while (message := self.message()) is not None:
            messages.append(message)
        return messages

    def close(self):
        self.conn.close()


def _rename(server, name):
    status, body = server.request("PUT", f"/rest/entities/Customer/{CUSTOMER}",
                                  json.dumps({"name": name}).encode(),
                                  {"Content-Type": "application/json"})
    assert status == 200, body


def test_resume_after_a_restart_loses_and_repeats_nothing(tmp_path, database_url):
    server = wait_until_ready(launch(tmp_path / "a", database_url, FAST, workers=2))
    try:
        stream = Stream(server)
        for n in range(3):
            _rename(server, f"Before {n}")
        first = stream.events(2)
        last = first[-1]["id"]
    finally:
        stop(server)                # SIGTERM: the worker ends the stream, then stops
    assert all("data" not in m or json.loads(m["data"])["id"] > last for m in stream.rest())
    stream.close()
    again = wait_until_ready(launch(tmp_path / "b", database_url, FAST, workers=2))
    try:
        for n in range(2):
            _rename(again, f"After {n}")
        resumed = Stream(again, last_event_id=last)
        events = resumed.events(3)
        assert [e["id"] for e in events] == [last + 1, last + 2, last + 3]
        assert [e["kind"] for e in events] == ["UPDATE"] * 3
        resumed.close()
    finally:
        stop(again)


def test_the_drain_on_sigterm_ends_streams_before_the_instance_stops(tmp_path, database_url):
    server = wait_until_ready(launch(tmp_path, database_url, FAST,
                                     serve_args=("--drain", "30", "--graceful-timeout", "30")))
    try:
        stream = Stream(server)
        _rename(server, "Seen")
        assert len(stream.events(1)) == 1
        server.process.send_signal(signal.SIGTERM)
        stream.rest()               # ends cleanly, well before the 30 s drain is over
        assert server.process.poll() is None, "the stream ended only with the server"
        stream.close()
    finally:
        server.process.send_signal(signal.SIGTERM)      # a second SIGTERM skips the drain
        server.process.wait(timeout=60)


def test_serve_starts_the_delivery_worker_for_the_settings_subscriptions(tmp_path, database_url):
    from webhook_support import Receiver, verify
    receiver = Receiver()
    secret = "a-webhook-secret-of-some-length"
    prefix = "svc.webhooks.subscription.crm."
    server = wait_until_ready(launch(tmp_path, database_url, {
        **FAST, "svc.webhooks.deliver-in-serve": True,
        "svc.webhooks.allow-private-addresses": True, f"{prefix}url": receiver.url,
        f"{prefix}entities": "Customer", f"{prefix}secret": secret}))
    try:
        _rename(server, "Pushed")
        receiver.wait_for(1)
        headers, body = receiver.received[0]
        assert verify(secret, headers["Svc-Signature"], body)
        assert json.loads(body)["entityId"] == CUSTOMER
    finally:
        stop(server)
        receiver.close()


def _delivering(tmp_path, database_url, receiver, workers=1):
    prefix = "svc.webhooks.subscription.crm."
    return wait_until_ready(launch(tmp_path, database_url, {
        **FAST, "svc.webhooks.deliver-in-serve": True, "svc.webhooks.timeout": "2s",
        "svc.webhooks.allow-private-addresses": True, f"{prefix}url": receiver.url,
        f"{prefix}entities": "Customer", f"{prefix}secret": "a-webhook-secret-of-some-length"},
        workers=workers))


def _until(predicate, seconds=30, what="the condition"):
    deadline = time.monotonic() + seconds
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"{what} did not come"
        time.sleep(0.1)
    return found


def _delivery_pids(server):
    """The delivery workers the master started, in order (from its log)."""
    return [int(pid) for pid in
            re.findall(r"webhook delivery worker started \(pid (\d+)\)", server.log())]


def _is_running(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except FileNotFoundError:
        return False


def _pushed(server, receiver, count):
    _rename(server, f"Pushed {count}")
    receiver.wait_for(count, seconds=30)


def test_delivery_goes_on_when_a_worker_exits_and_when_the_master_reloads(tmp_path,
                                                                          database_url):
    from webhook_support import Receiver
    receiver = Receiver()
    server = _delivering(tmp_path, database_url, receiver, workers=2)
    try:
        [delivery] = _until(lambda: _delivery_pids(server), what="the delivery worker")
        _pushed(server, receiver, 1)
        workers = [pid for pid in server.worker_pids() if pid != delivery]
        os.kill(workers[0], signal.SIGTERM)             # a worker exits; gunicorn replaces it
        _until(lambda: workers[0] not in server.worker_pids(), what="the worker's exit")
        _pushed(server, receiver, 2)
        server.process.send_signal(signal.SIGHUP)       # every worker is replaced
        _until(lambda: not set(workers[1:]) & set(server.worker_pids()), what="the reload")
        _until(lambda: len(server.worker_pids()) == 3, what="the new workers")
        _pushed(server, receiver, 3)
        assert _delivery_pids(server) == [delivery] and _is_running(delivery)
    finally:
        stop(server)
        receiver.close()


def test_a_delivery_worker_that_dies_is_started_again(tmp_path, database_url):
    from webhook_support import Receiver
    receiver = Receiver()
    server = _delivering(tmp_path, database_url, receiver)
    try:
        [first] = _until(lambda: _delivery_pids(server), what="the delivery worker")
        os.kill(first, signal.SIGKILL)
        [_, second] = _until(lambda: _delivery_pids(server)[1:] and _delivery_pids(server),
                             what="a new delivery worker")
        assert second != first and _is_running(second)
        _pushed(server, receiver, 1)
    finally:
        stop(server)
        receiver.close()


def test_sigterm_stops_serve_and_its_delivery_worker_at_once(tmp_path, database_url):
    from webhook_support import Receiver
    receiver = Receiver()
    server = _delivering(tmp_path, database_url, receiver, workers=2)
    try:
        [delivery] = _until(lambda: _delivery_pids(server), what="the delivery worker")
        _pushed(server, receiver, 1)
        started = time.monotonic()
        for _ in range(3):                              # impatient: SIGTERM again and again
            server.process.send_signal(signal.SIGTERM)
            time.sleep(0.05)
        server.process.wait(timeout=15)
        assert time.monotonic() - started < 10
        _until(lambda: not _is_running(delivery), seconds=5, what="the delivery worker's end")
        assert server.log().count("webhook delivery worker (pid") == 1      # stopped once
    finally:
        if server.process.poll() is None:
            server.process.kill()
        receiver.close()
