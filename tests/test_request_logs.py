"""Request ids and log lines: JSON by a setting, the id on every line."""
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from werkzeug.test import Client

from conftest import get_token
from servers import gunicorn_server


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def json_logged(make_app):
    app = make_app({"svc.log.format": "json", "svc.log.requests": True})
    return app, Client(app)


def test_a_well_formed_request_id_is_answered_back(client, auth):
    response = client.get("/rest/entities/Customer?limit=1",
                          headers={**auth, "X-Request-Id": "abc-123.x:y_z"})
    assert response.headers["X-Request-Id"] == "abc-123.x:y_z"


@pytest.mark.parametrize("given", ["", "has space", "x" * 129, "semi;colon", "é"])
def test_a_malformed_request_id_is_replaced_by_a_new_one(client, auth, given):
    response = client.get("/rest/entities/Customer?limit=1", headers={**auth, "X-Request-Id": given})
    answered = response.headers["X-Request-Id"]
    assert answered and answered != given


def test_each_request_gets_its_own_id(client):
    ids = {client.get("/health/live").headers["X-Request-Id"] for _ in range(3)}
    assert len(ids) == 3


def test_request_lines_are_json_with_the_answered_id_and_no_secrets(json_logged, capsys):
    app, client = json_logged
    token = get_token(client)
    app.observer.request_log.flush()
    capsys.readouterr()
    response = client.get("/rest/entities/Customer?limit=1&secretParam=hush",
                          headers={"Authorization": f"Bearer {token}", "X-Request-Id": "req-42"})
    assert response.status_code == 200
    app.observer.request_log.flush()        # request lines are written in batches
    err = capsys.readouterr().err
    lines = json_lines(err)
    (line,) = [line for line in lines if line["logger"] == "restsvc.request"]
    assert line["request_id"] == "req-42"
    assert line["route"] == "/rest/entities/<entity_name>" and line["method"] == "GET"
    assert line["status"] == 200 and line["client_id"] == "demo-client"
    assert line["bytes_out"] == len(response.data)
    assert token not in err and "hush" not in err


def test_a_500_body_carries_the_request_id_and_its_log_line_the_traceback(json_logged, capsys):
    app, client = json_logged
    token = get_token(client)

    def broken(token_hash):
        raise RuntimeError("secret internals")
    app.tokens.find_hash = broken
    app.observer.request_log.flush()
    capsys.readouterr()
    response = client.get("/rest/entities/Customer", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 500
    request_id = response.headers["X-Request-Id"]
    assert request_id in response.json["details"]
    assert "secret internals" not in response.get_data(as_text=True)
    app.observer.request_log.flush()
    lines = json_lines(capsys.readouterr().err)
    (error,) = [line for line in lines if line["level"] == "ERROR"]
    assert error["request_id"] == request_id
    assert "RuntimeError: secret internals" in error["traceback"]
    assert [line["status"] for line in lines if line["logger"] == "restsvc.request"] == [500]


def test_concurrent_requests_get_one_line_each_with_their_own_id_and_figures(json_logged, capsys):
    app, client = json_logged
    token = get_token(client)
    app.observer.request_log.flush()
    capsys.readouterr()

    def one_request(number):
        path = "/rest/entities/Customer?limit=1" if number % 2 else "/rest/entities/Nope"
        return client.get(path, headers={"Authorization": f"Bearer {token}",
                                         "X-Request-Id": f"many-{number}"}).status_code
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(one_request, range(200)))
    app.observer.request_log.flush()
    lines = [line for line in json_lines(capsys.readouterr().err)
             if line["logger"] == "restsvc.request"]
    assert sorted(line["request_id"] for line in lines) == sorted(f"many-{n}" for n in range(200))
    for line in lines:
        number = int(line["request_id"].split("-")[1])
        assert line["status"] == statuses[number] == (200 if number % 2 else 404)
        assert line["time"].endswith("Z") and line["duration_ms"] >= 0
        assert line["message"].startswith(f"GET {line['route']} {line['status']} ")


class _SlowClock:
    """The statements' clock, 20 ms further on at every reading: each
    statement takes 20 ms as the slow-statement log measures it, on either
    database."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 0.02
        return self.now


def test_slow_statements_are_logged_by_shape_with_the_request_id(make_app, capsys, monkeypatch):
    app = make_app({"svc.log.format": "json", "svc.log.slow-statement": "10ms"})
    client = Client(app)
    token = get_token(client)
    from restsvc import statements      # where every statement is timed
    monkeypatch.setattr(statements, "_clock", _SlowClock())
    capsys.readouterr()
    search = '{"conditions":[{"property":"name","operator":"=","value":"needle-value"}]}'
    response = client.get("/rest/entities/Customer/search", query_string={"filter": search},
                          headers={"Authorization": f"Bearer {token}", "X-Request-Id": "slow-1"})
    assert response.status_code == 200
    slow = [line for line in json_lines(capsys.readouterr().err)
            if line["message"].startswith("slow statement")]
    assert slow and all(line["request_id"] == "slow-1" for line in slow)
    assert any("customer" in line["message"].lower() for line in slow)
    assert not any("needle-value" in line["message"] for line in slow)


def test_gunicorn_writes_one_json_line_per_request_with_its_id(tmp_path, database_url):
    overrides = {"svc.log.format": "json", "svc.log.requests": True}
    with gunicorn_server(tmp_path / "server", database_url, overrides) as server:
        status, _ = server.request("GET", "/rest/entities/Product?limit=1",
                                   headers={"X-Request-Id": "from-balancer-7"})
        assert status == 200
        lines = []
        for _ in range(50):         # request lines are written in batches, within 0.5 s
            lines = [line for line in json_lines(server.log())
                     if line.get("request_id") == "from-balancer-7"]
            if lines:
                break
            time.sleep(0.1)
    assert len(lines) == 1 and lines[0]["route"] == "/rest/entities/<entity_name>"
    assert lines[0]["remote_addr"] == "127.0.0.1"


@pytest.fixture
def plain_logged(make_app, monkeypatch):
    """restsvc's own plain handler, as in production (pytest's root handler
    would otherwise make it leave the log to the host's)."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    app = make_app({"svc.log.format": "plain", "svc.log.requests": True})
    return app, Client(app)


def test_plain_request_lines_escape_control_characters_of_what_callers_send(plain_logged, capsys):
    app, client = plain_logged
    app.observer.request_log.flush()
    capsys.readouterr()
    client.open("/health/live", method="GET\nFORGED\x1b")
    app.observer.request_log.flush()
    err = capsys.readouterr().err
    assert "GET\\x0aFORGED\\x1b" in err
    assert not [line for line in err.splitlines() if line.startswith("FORGED")]


def test_plain_log_messages_escape_control_characters(plain_logged, capsys):
    app, _ = plain_logged
    capsys.readouterr()
    try:
        try:
            raise ValueError("first\nFORGED by the context")
        except ValueError:
            raise RuntimeError("boom\nFORGED by the message")  # noqa: B904 -- the context shown
    except RuntimeError:
        logging.getLogger("restsvc.test").exception("on %s", "/rest/x\nFORGED line\u2028too")
    err = capsys.readouterr().err
    assert "/rest/x\\x0aFORGED line\\u2028too" in err
    assert "RuntimeError: boom\\x0aFORGED by the message" in err
    assert "ValueError: first\\x0aFORGED by the context" in err
    assert not [line for line in err.splitlines() if line.startswith("FORGED")]
    assert "Traceback (most recent call last):\n" in err      # a traceback keeps its lines
