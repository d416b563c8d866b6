"""Sign-in limits on /oauth2/*: failures hold back the address they come from,
never the legitimate client or user signing in from elsewhere."""

import pytest
from werkzeug.test import Client

from conftest import at_once, basic
from restsvc.security import clients, ratelimit

LIMIT = {"svc.authserver.rate-limit.max-failures": 5, "svc.authserver.rate-limit.window": "5m"}


class Clock:
    """The limiter's clock, moved by the test instead of by waiting."""

    def __init__(self, now):
        self.now = now

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock(1_800_000_000.0)
    monkeypatch.setattr(ratelimit, "time", fake)
    return fake


def client_grant(c, client_id="demo-client", secret="demo-secret", address="10.0.0.1"):
    return c.post("/oauth2/token", data={"grant_type": "client_credentials"},
                  headers={"Authorization": basic(client_id, secret)},
                  environ_base={"REMOTE_ADDR": address})


def password_grant_from(c, username, password, address):
    return c.post("/oauth2/token",
                  data={"grant_type": "password", "username": username, "password": password},
                  headers={"Authorization": basic("demo-client", "demo-secret")},
                  environ_base={"REMOTE_ADDR": address})


def fail_until_refused(attempt, clock):
    """Fail again and again from one address, waiting out every delay, until
    refused for longer than any delay; returns how many failures were checked."""
    checked = 0
    while checked < 100:
        response = attempt()
        if response.status_code != 429:
            assert response.status_code in (400, 401)
            checked += 1
            continue
        wait = int(response.headers["Retry-After"])
        if wait > ratelimit.MAX_DELAY:
            return checked
        clock.now += wait
    raise AssertionError("never refused")


@pytest.fixture
def limited(make_app, clock):
    return Client(make_app(LIMIT))


def test_failures_from_one_address_do_not_refuse_the_user_elsewhere(limited, clock):
    attacker = lambda: password_grant_from(limited, "alice", "guess", "10.6.6.6")  # noqa: E731
    assert fail_until_refused(attacker, clock) == 5
    assert password_grant_from(limited, "alice", "alice-password", "10.6.6.6").status_code == 429
    assert password_grant_from(limited, "alice", "alice-password", "10.0.0.9").status_code == 200


def test_bad_secrets_for_a_client_do_not_lock_the_client_out(limited, clock):
    attacker = lambda: client_grant(limited, secret="guess", address="10.6.6.6")  # noqa: E731
    assert fail_until_refused(attacker, clock) == 5
    assert client_grant(limited, address="10.6.6.6").status_code == 429
    assert client_grant(limited, address="10.0.0.9").status_code == 200
    # ... nor the users signing in through it
    assert password_grant_from(limited, "alice", "alice-password", "10.0.0.9").status_code == 200


@pytest.mark.parametrize("endpoint", ["/oauth2/token", "/oauth2/revoke", "/oauth2/introspect"])
def test_an_address_that_failed_too_often_is_refused_for_that_account(limited, clock, endpoint):
    def attempt(secret="guess"):
        return limited.post(endpoint, data={"grant_type": "client_credentials", "token": "x"},
                            headers={"Authorization": basic("demo-client", secret)},
                            environ_base={"REMOTE_ADDR": "10.6.6.6"})
    fail_until_refused(attempt, clock)
    response = attempt("demo-secret")          # even the right secret, while refused
    assert response.status_code == 429
    assert response.json["error"] == "temporarily_unavailable"
    assert 0 < int(response.headers["Retry-After"]) <= 300
    assert "demo-secret" not in response.get_data(as_text=True)
    clock.now += int(response.headers["Retry-After"])
    assert attempt("demo-secret").status_code == 200     # the window is over


def test_failures_of_an_account_make_the_failing_addresses_wait_longer_and_longer(limited, clock):
    waits = []
    for n in range(5):                         # one failure each from five addresses
        response = password_grant_from(limited, "alice", "guess", f"10.6.6.{n}")
        assert response.status_code == 400
        waits.append(int(response.headers.get("Retry-After", 0)))
    assert waits == [0, 0, 0, 1, 2]
    refused = password_grant_from(limited, "alice", "alice-password", "10.6.6.4")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "2"
    # an address that has not failed on alice signs in at once
    assert password_grant_from(limited, "alice", "alice-password", "10.0.0.9").status_code == 200
    clock.now += 2                             # the delay over, the right password works
    assert password_grant_from(limited, "alice", "alice-password", "10.6.6.4").status_code == 200


def test_delays_never_exceed_the_maximum(limited, clock):
    for n in range(12):
        response = password_grant_from(limited, "alice", "guess", f"10.6.7.{n}")
        assert int(response.headers.get("Retry-After", 0)) <= ratelimit.MAX_DELAY
    assert response.headers["Retry-After"] == str(ratelimit.MAX_DELAY)


def test_an_address_failing_on_many_accounts_is_refused_for_all(make_app, clock):
    c = Client(make_app({**LIMIT, "svc.authserver.rate-limit.address-max-failures": 8}))
    for n in range(8):                         # password spraying: one guess per user
        assert password_grant_from(c, f"user{n}", "Summer2024!", "10.6.6.6").status_code == 400
    assert password_grant_from(c, "alice", "alice-password", "10.6.6.6").status_code == 429
    assert password_grant_from(c, "alice", "alice-password", "10.0.0.9").status_code == 200


def test_parallel_wrong_passwords_are_checked_no_more_often_than_the_limit(make_app, clock,
                                                                           monkeypatch):
    c = Client(make_app({**LIMIT, "svc.authserver.rate-limit.max-failures": 10}))
    monkeypatch.setattr(clients, "ITERATIONS", 30_000)   # each check takes a while

    def guess(n):
        return password_grant_from(c, "alice", f"guess-{n}", "10.6.6.6").status_code
    statuses = at_once(guess, 24)
    assert sorted(set(statuses)) == [400, 429]
    assert statuses.count(400) <= 10


def test_counts_are_shared_by_every_instance_on_the_database(make_app, clock):
    first, second = Client(make_app(LIMIT)), Client(make_app(LIMIT))
    turns = iter([first, second] * 50)
    assert fail_until_refused(lambda: client_grant(next(turns), secret="guess"), clock) == 5
    assert client_grant(first).status_code == 429
    assert client_grant(second).status_code == 429


def test_max_failures_zero_turns_the_limits_off(make_app, clock):
    c = Client(make_app({"svc.authserver.rate-limit.max-failures": 0}))
    for _ in range(12):
        response = client_grant(c, secret="guess")
        assert response.status_code == 401 and "Retry-After" not in response.headers
    assert client_grant(c).status_code == 200


def test_by_default_one_address_gets_ten_checks_per_account(client, clock):
    assert fail_until_refused(lambda: client_grant(client, secret="guess"), clock) == 10
