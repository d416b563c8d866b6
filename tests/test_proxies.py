"""Forwarded headers are believed only from svc.trusted-proxies; Location
headers are path-absolute (or under svc.public-url), never built from Host
or forwarded headers; a header problem is never answered with HTML."""
import dataclasses
import json

import pytest
from werkzeug.routing import Rule
from werkzeug.test import Client

from conftest import basic
from restsvc.web import json_response
from restsvc.demo import application as demo
from restsvc.settings import SettingsError

PROXY = {"svc.trusted-proxies": "10.0.0.0/8, 192.0.2.7"}
ADDRESS_LIMIT = {"svc.authserver.rate-limit.address-max-failures": 2,
                 "svc.authserver.rate-limit.max-failures": 10}


def whoami(ctx):
    return json_response({"address": ctx.request.remote_addr, "scheme": ctx.request.scheme})


@pytest.fixture
def echo(make_app):
    """A client of an app with an endpoint that tells the caller's address and scheme."""
    application = dataclasses.replace(demo, endpoints=tuple(demo.endpoints) + (
        Rule("/whoami", methods=["GET"], endpoint=whoami),))

    def build(overrides=None):
        client = Client(make_app(overrides, application=application))

        def ask(peer, **headers):
            answer = client.get("/whoami", headers=headers, environ_base={"REMOTE_ADDR": peer})
            assert answer.status_code == 200, answer.get_data(as_text=True)
            return answer.json["address"], answer.json["scheme"]
        return ask
    return build


def create_customer(client, auth, **headers):
    response = client.post("/rest/entities/Customer", json={"name": "Proxy Test"},
                           headers={**auth, **headers})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response


def test_location_is_path_absolute_whatever_host_and_forwarded_headers_say(client, auth):
    response = create_customer(client, auth, Host="evil.example", **{
        "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"})
    assert response.headers["Location"] == f"/rest/entities/Customer/{response.json['id']}"
    upload = client.post("/rest/files", query_string={"name": "a.txt"}, data=b"x",
                         headers={**auth, "Host": "evil.example"})
    assert upload.headers["Location"].startswith("/rest/files?fileRef=")


def test_location_is_under_the_public_url_when_one_is_configured(make_app, auth):
    client = Client(make_app({"svc.public-url": "https://api.example.com/shop/"}))
    from conftest import get_token
    auth = {"Authorization": f"Bearer {get_token(client)}"}
    response = create_customer(client, auth, Host="evil.example")
    assert response.headers["Location"] == \
        f"https://api.example.com/shop/rest/entities/Customer/{response.json['id']}"
    upload = client.post("/rest/files", query_string={"name": "a.txt"}, data=b"x", headers=auth)
    assert upload.headers["Location"].startswith("https://api.example.com/shop/rest/files?fileRef=")


def test_forwarded_headers_are_ignored_without_trusted_proxies(echo):
    ask = echo()
    assert ask("127.0.0.1", **{"X-Forwarded-For": "203.0.113.9",
                               "X-Forwarded-Proto": "https"}) == ("127.0.0.1", "http")
    assert ask("127.0.0.1", Forwarded="for=203.0.113.9;proto=https") == ("127.0.0.1", "http")


def test_forwarded_headers_of_an_untrusted_peer_are_ignored(echo):
    ask = echo(PROXY)
    assert ask("198.51.100.1", **{"X-Forwarded-For": "203.0.113.9",
                                  "X-Forwarded-Proto": "https"}) == ("198.51.100.1", "http")


def test_the_client_is_the_rightmost_address_that_is_not_a_trusted_proxy(echo):
    ask = echo(PROXY)
    # The client wrote the first two hops itself; the proxies appended the rest.
    chain = "1.1.1.1, 203.0.113.9, 10.1.2.3"
    assert ask("192.0.2.7", **{"X-Forwarded-For": chain,
                               "X-Forwarded-Proto": "https"}) == ("203.0.113.9", "https")
    assert ask("10.0.0.1", Forwarded='for="[2001:db8::5]:4711";proto=https, for=10.9.9.9') \
        == ("2001:db8::5", "https")
    assert ask("10.0.0.1", **{"X-Forwarded-For": "10.0.0.2"}) == ("10.0.0.2", "http")
    # Garbage is not an address: the last good one before it is the client.
    assert ask("10.0.0.1", **{"X-Forwarded-For": "<script>, 10.0.0.3",
                              "X-Forwarded-Proto": "gopher"}) == ("10.0.0.3", "http")


def token_attempt(client, address, peer="127.0.0.1"):
    return client.post("/oauth2/token", data={"grant_type": "client_credentials"},
                       headers={"Authorization": basic("demo-client", "wrong"),
                                "X-Forwarded-For": address},
                       environ_base={"REMOTE_ADDR": peer})


def test_sign_in_limits_count_the_forwarded_client_behind_a_trusted_proxy(make_app):
    client = Client(make_app({**ADDRESS_LIMIT, "svc.trusted-proxies": "127.0.0.1"}))
    assert [token_attempt(client, "203.0.113.9").status_code for _ in range(3)] == [401, 401, 429]
    # Another client behind the same proxy is not held back by the first one's failures.
    assert token_attempt(client, "203.0.113.10").status_code == 401


def test_a_spoofed_forwarded_for_does_not_escape_the_sign_in_limits(make_app):
    client = Client(make_app(ADDRESS_LIMIT))
    statuses = [token_attempt(client, f"203.0.113.{n}").status_code for n in range(3)]
    assert statuses == [401, 401, 429]


@pytest.mark.parametrize("key, value", [("svc.trusted-proxies", "proxy.example"),
                                        ("svc.trusted-proxies", "10.0.0.0/33"),
                                        ("svc.public-url", "api.example.com"),
                                        ("svc.public-url", "ftp://api.example.com"),
                                        ("svc.public-url", "https://api.example.com/?a=b")])
def test_bad_proxy_settings_stop_startup_naming_the_key(make_app, key, value):
    with pytest.raises(SettingsError, match=key):
        make_app({key: value})


# -- a real gunicorn: what reaches the app at all -------------------------------------

def _answers_as_json(status, body):
    assert not body.lstrip().lower().startswith((b"<!doctype", b"<html")), body[:200]
    return status, json.loads(body)


@pytest.mark.parametrize("trusted", ["", "127.0.0.1"])
def test_gunicorn_takes_no_script_name_scheme_or_host_from_headers(database_url, tmp_path,
                                                                   trusted):
    from servers import gunicorn_server
    overrides = {**ADDRESS_LIMIT, "svc.trusted-proxies": trusted}
    with gunicorn_server(tmp_path / "server", database_url, overrides) as server:
        status, body = _answers_as_json(*server.request(
            "GET", "/rest/entities/Customer?limit=1", headers={"SCRIPT_NAME": "/evil"}))
        assert status == 200 and len(body) == 1
        status, body = _answers_as_json(*server.request(
            "GET", "/evil/rest/entities/Customer", headers={"SCRIPT_NAME": "/evil"}))
        assert status == 404
        conn = server.connection()
        try:
            conn.request("POST", "/rest/entities/Customer", body=b'{"name": "Via Gunicorn"}',
                         headers={**server.auth(), "Host": "evil.example",
                                  "X-Forwarded-Proto": "https", "SCRIPT_NAME": "/evil",
                                  "Content-Type": "application/json"})
            response = conn.getresponse()
            created = json.loads(response.read())
            assert response.status == 201
            assert response.getheader("Location") == f"/rest/entities/Customer/{created['id']}"
        finally:
            conn.close()
        # Sign-in limits: the forwarded client only when the peer is a trusted proxy.
        for _ in range(2):
            assert _token_over_http(server, "203.0.113.9") == 401
        assert _token_over_http(server, "203.0.113.9") == 429
        assert _token_over_http(server, "203.0.113.10") == (401 if trusted else 429)


def _token_over_http(server, forwarded_for):
    status, _ = server.request("POST", "/oauth2/token", b"grant_type=client_credentials", {
        "Authorization": basic("demo-client", "wrong"), "X-Forwarded-For": forwarded_for,
        "Content-Type": "application/x-www-form-urlencoded"})
    return status
