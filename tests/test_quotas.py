"""Per-client and per-user quotas, counted across instances in the database."""
import pytest
from werkzeug.test import Client

from conftest import bearer, get_token, password_grant
from jwt_support import hs256_headers, hs256_settings
from restsvc.settings import SettingsError


class FrozenClock:
    """One clock for both instances: "in a second" without depending on speed."""

    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def two_instances(make_app):
    def build(limits):
        clock = FrozenClock()
        apps = [make_app(limits), make_app(limits)]
        for app in apps:
            app.quotas.clock = clock
        return [Client(app) for app in apps], clock
    return build


def test_the_101st_request_in_a_second_is_refused_across_two_instances(two_instances):
    (first, second), clock = two_instances({"svc.rate-limit.client.reader": "100/s"})
    headers = bearer(get_token(first, "reader", "reader-secret"))
    statuses = [(first if i % 2 else second).get("/rest/entities/Product?limit=1",
                                                   headers=headers).status_code
                for i in range(100)]
    assert statuses == [200] * 100
    refused = first.get("/rest/entities/Product?limit=1", headers=headers)
    assert refused.status_code == 429
    assert refused.json["error"] == "Too many requests"
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit-Limit"] == "100"
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert second.get("/rest/entities/Product?limit=1", headers=headers).status_code == 429
    monitor = bearer(get_token(first, "monitor", "monitor-secret"))
    assert 'restsvc_quota_refusals_total{kind="client"} 1' in first.get(
        "/metrics", headers=monitor).get_data(as_text=True)
    # Other clients, and the token endpoint, are not held by the reader's quota.
    assert second.get("/rest/entities/Product?limit=1",
                      headers=bearer(get_token(second))).status_code == 200
    assert get_token(first, "reader", "reader-secret")
    clock.now += 0.05          # 5 more requests' worth of time
    statuses = [first.get("/rest/entities/Product?limit=1", headers=headers).status_code
                for _ in range(6)]
    assert statuses == [200] * 5 + [429]


def test_allowed_answers_say_how_many_requests_are_left(two_instances):
    (first, second), clock = two_instances({"svc.rate-limit.client.reader": "10/s burst 20"})
    headers = bearer(get_token(first, "reader", "reader-secret"))
    response = first.get("/rest/entities/Product?limit=1", headers=headers)
    assert response.headers["RateLimit-Limit"] == "20"
    assert response.headers["RateLimit-Remaining"] == "19"
    response = second.get("/rest/entities/Product?limit=1", headers=headers)
    assert response.headers["RateLimit-Remaining"] == "18"
    for _ in range(18):
        assert first.get("/rest/entities/Product?limit=1", headers=headers).status_code == 200
    assert second.get("/rest/entities/Product?limit=1", headers=headers).status_code == 429


def test_a_user_quota_holds_the_user_whichever_client_signs_in(two_instances):
    (first, second), clock = two_instances({"svc.rate-limit.user.alice": "2/s"})
    token = password_grant(first).json["access_token"]
    statuses = [client.get("/rest/userInfo", headers=bearer(token)).status_code
                for client in (first, second, first)]
    assert statuses == [200, 200, 429]
    assert first.get("/rest/userInfo", headers=bearer(get_token(first))).status_code == 200


def test_an_external_user_named_like_a_local_user_has_a_bucket_of_its_own(two_instances):
    (first, second), clock = two_instances({"svc.rate-limit.user.alice": "2/s",
                                            **hs256_settings()})
    local = bearer(password_grant(first).json["access_token"])
    external = hs256_headers("ext-alice", "alice")
    assert [first.get("/rest/userInfo", headers=local).status_code for _ in range(3)] == \
        [200, 200, 429]
    # The same quota (by its username), counted apart from the local alice's.
    assert [second.get("/rest/userInfo", headers=external).status_code for _ in range(3)] == \
        [200, 200, 429]


def test_callers_without_a_quota_get_no_rate_limit_headers(client, auth):
    response = client.get("/rest/entities/Product?limit=1", headers=auth)
    assert "RateLimit-Limit" not in response.headers


@pytest.mark.parametrize("value", ["100", "100/week", "0/s", "x/s", "100/s burst"])
def test_a_malformed_quota_stops_startup_naming_the_setting(make_app, value):
    with pytest.raises(SettingsError, match="svc.rate-limit.client.reader"):
        make_app({"svc.rate-limit.client.reader": value})
