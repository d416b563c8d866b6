"""Repeated failed authentication on /oauth2/* is refused for a while."""
import time

import pytest
from werkzeug.test import Client

from conftest import basic
from restsvc.security import ratelimit

LIMIT = {"svc.authserver.rate-limit.max-failures": 3, "svc.authserver.rate-limit.window": "1m"}


def client_grant(c, client_id="demo-client", secret="demo-secret", address="10.0.0.1"):
    return c.post("/oauth2/token", data={"grant_type": "client_credentials"},
                  headers={"Authorization": basic(client_id, secret)},
                  environ_base={"REMOTE_ADDR": address})


def password_grant_from(c, username, password, address):
    return c.post("/oauth2/token",
                  data={"grant_type": "password", "username": username, "password": password},
                  headers={"Authorization": basic("demo-client", "demo-secret")},
                  environ_base={"REMOTE_ADDR": address})


@pytest.fixture
def limited(make_app):
    return Client(make_app(LIMIT))


@pytest.mark.parametrize("endpoint", ["/oauth2/token", "/oauth2/revoke", "/oauth2/introspect"])
def test_repeated_bad_client_secrets_are_refused_with_429(limited, endpoint):
    for _ in range(3):
        response = limited.post(endpoint, data={"grant_type": "client_credentials", "token": "x"},
                                headers={"Authorization": basic("demo-client", "wrong")})
        assert response.status_code == 401
    response = client_grant(limited)          # even the right secret, while blocked
    assert response.status_code == 429
    assert response.json["error"] == "temporarily_unavailable"
    assert 0 < int(response.headers["Retry-After"]) <= 60
    assert "demo-secret" not in response.get_data(as_text=True)


def test_the_block_ends_with_the_window(limited, monkeypatch):
    for _ in range(3):
        client_grant(limited, secret="wrong")
    assert client_grant(limited).status_code == 429
    later = time.time() + 61
    monkeypatch.setattr(ratelimit.time, "time", lambda: later)
    assert client_grant(limited).status_code == 200


def test_bad_passwords_block_the_user_but_not_the_client(limited):
    for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):   # spread over addresses
        assert password_grant_from(limited, "alice", "wrong", address).status_code == 400
    assert password_grant_from(limited, "alice", "alice-password", "10.0.0.9").status_code == 429
    assert password_grant_from(limited, "admin", "admin-password", "10.0.0.9").status_code == 200
    assert client_grant(limited, address="10.0.0.9").status_code == 200


def test_failures_from_one_address_block_that_address_only(limited):
    for client_id in ("reader", "nobody", "demo-client"):
        assert client_grant(limited, client_id, "wrong", address="10.0.0.1").status_code == 401
    assert client_grant(limited, "reader", "reader-secret", address="10.0.0.1").status_code == 429
    assert client_grant(limited, "reader", "reader-secret", address="10.0.0.2").status_code == 200


def test_counts_are_shared_by_every_instance_on_the_database(make_app):
    first, second = Client(make_app(LIMIT)), Client(make_app(LIMIT))
    for c in (first, second, first):
        assert client_grant(c, secret="wrong").status_code == 401
    assert client_grant(second).status_code == 429


def test_max_failures_zero_turns_the_limit_off(make_app):
    c = Client(make_app({"svc.authserver.rate-limit.max-failures": 0}))
    for _ in range(12):
        assert client_grant(c, secret="wrong").status_code == 401
    assert client_grant(c).status_code == 200


def test_the_default_limit_is_ten_failures(client):
    for _ in range(10):
        assert client_grant(client, secret="wrong").status_code == 401
    assert client_grant(client).status_code == 429
