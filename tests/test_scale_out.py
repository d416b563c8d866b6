"""The whole scale-out arrangement, for real: two ``restsvc serve`` instances on
one PostgreSQL schema of their own, files on an S3-compatible server (moto),
HAProxy in front (round robin, active checks of /health/ready). Everything
the clients do goes through the balancer only.

Runs on the PostgreSQL pass (RESTSVC_TEST_DATABASE_URL); skipped with a
message where PostgreSQL, HAProxy or the S3 server is missing."""
import json
import os
import shutil
import threading
import time
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

from conftest import PG_URL, at_once, basic, http, postgres_schema
from servers import (TcpRelay, haproxy, launch, new_bucket, object_storage_settings,
                     s3_server_missing, wait_until_ready)

pytestmark = pytest.mark.skipif(
    not PG_URL, reason="the scale-out test needs PostgreSQL (RESTSVC_TEST_DATABASE_URL): "
                       "instances share one database server")

DRAIN = 3                    # seconds; HAProxy's checks take an instance out within ~1 s
MAX_FAILURES = 4


class Balancer:
    """A client of the balancer: one keep-alive connection per thread."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.token = None

    def request(self, method, path, body=None, headers=None):
        import http.client
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            conn.request(method, path, body=body, headers={**auth, **(headers or {})})
            response = conn.getresponse()
            return response.status, response.read(), response
        finally:
            conn.close()

    def json(self, method, path, data=None):
        body = None if data is None else json.dumps(data).encode()
        status, raw, _ = self.request(method, path, body, {"Content-Type": "application/json"})
        return status, json.loads(raw) if raw else None

    def client_token(self, secret="demo-secret"):
        return self.request("POST", "/oauth2/token", b"grant_type=client_credentials",
                            {"Authorization": basic("demo-client", secret),
                             "Content-Type": "application/x-www-form-urlencoded"})


@pytest.fixture
def schema_url():
    with postgres_schema("restsvc_scale") as url:
        yield url


@pytest.fixture
def arrangement(tmp_path, schema_url, request):
    if shutil.which("haproxy") is None:
        pytest.skip("the scale-out test needs HAProxy (apt-get install haproxy)")
    missing = s3_server_missing()
    if missing:
        pytest.skip(missing)
    endpoint = request.getfixturevalue("s3_endpoint")
    settings = {**object_storage_settings(endpoint, new_bucket(endpoint)),
                "svc.rest.optimistic-locking-enabled": True,
                "svc.authserver.rate-limit.max-failures": MAX_FAILURES,
                "svc.demo-data": True}
    database = urlsplit(schema_url)
    relay = TcpRelay((database.hostname, database.port or 5432)).start()
    # The second instance reaches the database through a relay the test can cut.
    relayed_url = urlunsplit(database._replace(
        netloc=database.netloc.replace(f"{database.hostname}:{database.port or 5432}",
                                       f"127.0.0.1:{relay.port}")))
    urls = {"a": schema_url, "b": relayed_url}
    instances = {}

    def start(name, port=None):
        server = launch(tmp_path / name, urls[name], settings, workers=2,
                        serve_args=("--drain", str(DRAIN)), port=port)
        instances[name] = wait_until_ready(server, seconds=90)
        return server

    start("a")                       # creates the schema and the demo data first
    start("b")
    try:
        with haproxy(tmp_path, [(s.host, s.port) for s in instances.values()]) as url:
            balancer = Balancer(url)
            wait_for(lambda: all_ready(balancer), "HAProxy never saw both instances ready")
            yield balancer, instances, start, relay
    finally:
        for server in instances.values():
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
        relay.cut()


def wait_for(condition, what, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def all_ready(balancer, rounds=4):
    """A few readiness answers through the balancer: every instance takes its turn."""
    return all(balancer.request("GET", "/health/ready")[0] == 200 for _ in range(rounds))


def test_several_instances_behind_a_balancer_behave_as_one_service(arrangement):
    balancer, instances, start, relay = arrangement
    tokens_from_one_work_on_the_other(balancer)
    files_uploaded_through_one_download_through_the_other(balancer)
    one_writer_wins_an_optimistic_locking_conflict(balancer)
    an_instance_without_its_database_is_taken_out(balancer, instances["b"], relay)
    rolling_restart_fails_no_request_and_loses_no_write(balancer, instances, start)
    # Last: from here on the balancer's address is blocked at the token endpoint.
    sign_in_failures_count_across_instances(balancer)


def tokens_from_one_work_on_the_other(balancer):
    status, body, _ = balancer.client_token()
    assert status == 200
    balancer.token = json.loads(body)["access_token"]
    # Round robin: consecutive requests alternate between the two instances.
    assert [balancer.request("GET", "/rest/userInfo")[0] for _ in range(4)] == [200] * 4


def files_uploaded_through_one_download_through_the_other(balancer):
    content = os.urandom(7 << 20)        # two parts of a multipart upload
    status, body, _ = balancer.request("POST", "/rest/files?name=shared.bin", content,
                                       {"Content-Type": "application/octet-stream"})
    assert status == 201
    ref = quote(json.loads(body)["fileRef"], safe="")
    for _ in range(2):
        status, whole, _ = balancer.request("GET", f"/rest/files?fileRef={ref}")
        assert status == 200 and whole == content
        status, part, response = balancer.request("GET", f"/rest/files?fileRef={ref}",
                                                  headers={"Range": "bytes=5000000-5999999"})
        assert status == 206 and part == content[5000000:6000000]
        assert response.headers["Content-Range"] == f"bytes 5000000-5999999/{len(content)}"


def one_writer_wins_an_optimistic_locking_conflict(balancer):
    status, created = balancer.json("POST", "/rest/entities/Customer", {"name": "contested"})
    assert status == 201
    path = f"/rest/entities/Customer/{created['id']}"
    status, current = balancer.json("GET", path)

    def update(n):
        status, body = balancer.json("PUT", path, {"name": f"writer {n}",
                                                   "version": current["version"]})
        return status if status == 200 else (status, body["error"])
    answers = at_once(update, 8)
    # The reference's answer to a stale version: 400 "Optimistic lock".
    assert sorted(answers, key=str) == [(400, "Optimistic lock")] * 7 + [200], answers
    assert balancer.json("GET", path)[1]["version"] == current["version"] + 1


def sign_in_failures_count_across_instances(balancer):
    failures = 0
    while failures < MAX_FAILURES:
        status, _, response = balancer.client_token("wrong")
        assert status == 401
        failures += 1
        # Past a few failures on an account, its failing address waits a little.
        time.sleep(int(response.headers.get("Retry-After", 0)))
    # Each instance alone has seen only half of the failures; the address is
    # now refused for the account until the window ends.
    status, _, response = balancer.client_token("wrong")
    assert status == 429 and int(response.headers["Retry-After"]) > 60


def an_instance_without_its_database_is_taken_out(balancer, second, relay):
    relay.cut()
    # A connection the relay accepted just before the cut may still answer
    # once: the probe is asked again, as the balancer does, for up to 5 s.
    deadline = time.monotonic() + 5
    while True:
        status, body = http("GET", f"{second.base_url}/health/ready")  # as the balancer asks
        if status == 503 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 503
    assert json.loads(body)["details"] == {"database": "does not answer (OperationalError)"}
    time.sleep(1.5)                      # two failed checks 300 ms apart: out
    answers = [balancer.request("GET", "/rest/entities/Customer?limit=1")[0] for _ in range(20)]
    assert answers == [200] * 20
    relay.start()
    wait_for(lambda: http("GET", f"{second.base_url}/health/ready")[0] == 200,
             "the instance did not become ready again with its database back")


def rolling_restart_fails_no_request_and_loses_no_write(balancer, instances, start):
    count_before = count_customers(balancer)
    stop_load = threading.Event()
    results = {"written": 0, "failures": []}
    lock = threading.Lock()

    def load(n):
        i = 0
        while not stop_load.is_set():
            i += 1
            try:
                status = balancer.request("POST", "/rest/entities/Customer", json.dumps(
                    {"name": f"rolling {n}-{i}"}).encode(), {"Content-Type": "application/json"})[0]
                read = balancer.request("GET", "/rest/userInfo")[0]
            except OSError as exc:
                status, read = repr(exc), None
            with lock:
                if status == 201:
                    results["written"] += 1
                else:
                    results["failures"].append(("write", status))
                if read != 200:
                    results["failures"].append(("read", read))
            time.sleep(0.02)
    clients = [threading.Thread(target=load, args=(n,)) for n in range(4)]
    for client in clients:
        client.start()
    try:
        # b first: its pooled connections went through the cut relay.
        for name in ("b", "a"):
            server = instances[name]
            time.sleep(1)
            server.process.terminate()
            assert server.process.wait(timeout=DRAIN + 30) == 0, server.log()
            start(name, port=server.port)
            wait_for(lambda: all_ready(balancer), f"instance {name} did not come back")
    finally:
        stop_load.set()
        for client in clients:
            client.join()
    assert results["failures"] == []
    assert results["written"] > 20
    assert count_customers(balancer) == count_before + results["written"]


def count_customers(balancer):
    status, _, response = balancer.request("GET", "/rest/entities/Customer?returnCount=true&limit=1")
    assert status == 200
    return int(response.headers["X-Total-Count"])
