"""GET /health/live and /health/ready: anonymous, cheap, JSON, naming what is down
without secrets."""
import time

from werkzeug.test import Client

from conftest import make_settings
from files_support import FILE_STORAGE_KINDS
from restsvc import health
from restsvc.app import RestApp
from servers import free_port, object_storage_settings


def test_live_is_up_for_anyone_and_never_cached(client):
    response = client.get("/health/live")
    assert response.status_code == 200 and response.json == {"status": "UP"}
    assert response.headers["Cache-Control"] == "no-store"


@FILE_STORAGE_KINDS
def test_ready_is_up_while_the_database_and_every_file_storage_answer(client):
    response = client.get("/health/ready")
    assert response.status_code == 200 and response.json == {"status": "UP"}


def test_ready_is_503_naming_an_unreachable_object_storage_without_its_address(make_app):
    closed = f"http://127.0.0.1:{free_port()}"
    app = make_app(object_storage_settings(closed, "some-bucket", default=False))
    response = Client(app).get("/health/ready")
    assert response.status_code == 503
    assert response.json["status"] == "DOWN"
    assert list(response.json["details"]) == ["fileStorage.objects"]
    assert "127.0.0.1" not in response.get_data(as_text=True)
    assert "some-bucket" not in response.get_data(as_text=True)


def test_ready_is_503_naming_an_unreachable_database_without_its_url(tmp_path):
    url = f"postgresql://restsvc:pa55word@127.0.0.1:{free_port()}/restsvc"
    app = RestApp(make_settings(url, tmp_path, {"svc.datasource.init-schema": False}))
    client = Client(app)
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json == {"status": "DOWN",
                             "details": {"database": "does not answer (OperationalError)"}}
    assert "pa55word" not in response.get_data(as_text=True)
    assert client.get("/health/live").status_code == 200


def test_ready_answers_503_within_its_timeout_when_a_check_hangs(make_app, monkeypatch):
    app = make_app({"svc.health.timeout": "1s"})
    monkeypatch.setattr(app.files.default, "check", lambda: time.sleep(2.5))
    started = time.monotonic()
    response = Client(app).get("/health/ready")
    assert response.status_code == 503
    assert response.json["details"] == {"checks": "no answer within 1 s"}
    assert time.monotonic() - started < 2


def test_ready_is_503_once_the_instance_is_shutting_down(client, monkeypatch):
    monkeypatch.setattr(health, "is_shutting_down", lambda: True)
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json == {"status": "DOWN", "details": {"instance": "shutting down"}}
    assert client.get("/health/live").status_code == 200


def test_health_paths_come_from_the_settings(make_app):
    client = Client(make_app({"svc.health.live-path": "/ops/alive",
                              "svc.health.ready-path": "/ops/ready"}))
    assert client.get("/ops/alive").json == {"status": "UP"}
    assert client.get("/ops/ready").json == {"status": "UP"}
    assert client.get("/health/live").status_code == 404


def test_health_checks_need_a_token_only_when_the_patterns_say_so(make_app):
    client = Client(make_app({"svc.resource-server.authenticated-url-patterns": "/**"}))
    assert client.get("/health/live").status_code == 401
