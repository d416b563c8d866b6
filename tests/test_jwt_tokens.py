"""Resource-server mode: JWT access tokens of a configured identity provider,
checked against its JWKS, served here by a local http.server."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from werkzeug.test import Client

jwt = pytest.importorskip("jwt", reason="PyJWT is not installed (pip install 'restsvc[jwt]')")
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from jwt.algorithms import RSAAlgorithm  # noqa: E402

from conftest import bearer, get_token  # noqa: E402

ISSUER = "https://idp.example.test/realms/demo"
AUDIENCE = "restsvc-api"


class Idp:
    """Key pairs and the JWKS document that publishes some of them."""

    def __init__(self):
        self.keys = {}
        self.published = []
        self.fetches = 0

    def new_key(self, kid, publish=True):
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)

    def jwks(self):
        self.fetches += 1
        keys = []
        for kid in self.published:
            entry = json.loads(RSAAlgorithm.to_jwk(self.keys[kid].public_key()))
            keys.append({**entry, "kid": kid, "use": "sig", "alg": "RS256"})
        return {"keys": keys}

    def token(self, kid="k1", lifetime=300, **claims):
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "u-1", "preferred_username": "erin",
                "iat": now, "exp": now + lifetime, "realm_access": {"roles": ["sales"]},
                **claims}
        return jwt.encode(body, self.keys[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def idp():
    provider = Idp()
    provider.new_key("k1")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(provider.jwks()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider.jwks_uri = f"http://127.0.0.1:{server.server_address[1]}/certs"
    yield provider
    server.shutdown()
    server.server_close()


def jwt_settings(idp, **extra):
    prefix = "svc.resource-server.jwt.idp."
    return {prefix + "issuer": ISSUER, prefix + "jwks-uri": idp.jwks_uri,
            prefix + "audiences": AUDIENCE, prefix + "username-claim": "preferred_username",
            prefix + "roles-claim": "realm_access.roles",
            prefix + "role-mapping.sales": "rest-minimal, sales-reader",
            prefix + "role-mapping.admins": "rest-minimal, system-full-access",
            **{prefix + key: value for key, value in extra.items()}}


@pytest.fixture
def jwt_client(make_app, idp):
    return Client(make_app(jwt_settings(idp)))


def orders(client, token):
    return client.get("/rest/entities/Order", headers=bearer(token))


def assert_invalid_token(answer):
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"].startswith('Bearer realm="restsvc", '
                                                         'error="invalid_token"')
    assert answer.json["error"] == "invalid_token"


def test_valid_token_gets_the_mapped_roles(jwt_client, idp):
    token = idp.token()
    assert orders(jwt_client, token).status_code == 200
    info = jwt_client.get("/rest/userInfo", headers=bearer(token))
    assert info.status_code == 200 and info.json["username"] == "erin"
    assert jwt_client.post("/rest/entities/Customer", json={"name": "x"},
                           headers=bearer(token)).status_code == 403
    admin = idp.token(realm_access={"roles": ["admins"]})
    assert jwt_client.post("/rest/entities/Customer", json={"name": "x", "email": "x@x.example"},
                           headers=bearer(admin)).status_code == 201


def test_roles_that_map_to_nothing_give_no_access(jwt_client, idp):
    token = idp.token(realm_access={"roles": ["unknown-role"]})
    assert orders(jwt_client, token).status_code == 403


@pytest.fixture
def clock(monkeypatch):
    """The JWKS cache's clock, moved by hand."""
    from restsvc.security import jwtissuers
    now = [1000.0]
    monkeypatch.setattr(jwtissuers, "_now", lambda: now[0])

    def advance(seconds):
        now[0] += seconds
    return advance


def test_rotated_key_is_fetched_by_its_kid(jwt_client, idp, clock):
    assert orders(jwt_client, idp.token()).status_code == 200
    idp.new_key("k2")
    idp.published.remove("k1")
    clock(31)
    assert orders(jwt_client, idp.token(kid="k2")).status_code == 200
    assert idp.fetches == 2


def test_unknown_signing_key_is_refused_and_refetches_at_most_once_per_30_s(jwt_client, idp,
                                                                               clock):
    assert orders(jwt_client, idp.token()).status_code == 200
    idp.new_key("rogue", publish=False)
    for number in range(3):
        assert_invalid_token(orders(jwt_client, idp.token(kid="rogue", sub=f"a{number}")))
    assert idp.fetches == 1          # fetched just now: no re-fetch yet
    clock(31)
    for number in range(3):
        assert_invalid_token(orders(jwt_client, idp.token(kid="rogue", sub=f"b{number}")))
    assert idp.fetches == 2


def test_token_signed_by_another_key_under_a_known_kid_is_refused(jwt_client, idp):
    idp.new_key("rogue", publish=False)
    forged = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "preferred_username": "erin",
                         "exp": int(time.time()) + 300}, idp.keys["rogue"], algorithm="RS256",
                        headers={"kid": "k1"})
    assert_invalid_token(orders(jwt_client, forged))


def test_expired_token_is_refused(jwt_client, idp):
    assert_invalid_token(orders(jwt_client, idp.token(lifetime=-120)))


def test_clock_skew_of_a_minute_is_tolerated(jwt_client, idp):
    assert orders(jwt_client, idp.token(lifetime=-30)).status_code == 200
    assert orders(jwt_client, idp.token(nbf=int(time.time()) + 30, sub="s")).status_code == 200
    assert_invalid_token(orders(jwt_client, idp.token(nbf=int(time.time()) + 300, sub="t")))


def test_wrong_audience_is_refused(jwt_client, idp):
    assert_invalid_token(orders(jwt_client, idp.token(aud="another-api")))


def test_unknown_issuer_is_refused(jwt_client, idp):
    assert_invalid_token(orders(jwt_client, idp.token(iss="https://elsewhere.example")))


def test_alg_none_is_refused(jwt_client, idp):
    unsigned = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "preferred_username": "erin",
                           "exp": int(time.time()) + 300, "realm_access": {"roles": ["admins"]}},
                          None, algorithm="none")
    assert_invalid_token(orders(jwt_client, unsigned))


def test_symmetric_token_is_refused_unless_configured(make_app, idp):
    secret = "a-shared-secret-of-enough-length-32b"
    token = jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "preferred_username": "erin",
                        "exp": int(time.time()) + 300, "realm_access": {"roles": ["sales"]}},
                       secret, algorithm="HS256")
    assert_invalid_token(orders(Client(make_app(jwt_settings(idp))), token))
    configured = Client(make_app(jwt_settings(idp, algorithms="RS256, HS256", secret=secret)))
    assert orders(configured, token).status_code == 200


@pytest.mark.parametrize("token", ["eyJhbGciOi.broken.token", "eyJ" + "A" * 40 + ".x.y",
                                   "eyJhbGciOiJSUzI1NiJ9." + "A" * 20000 + ".sig"])
def test_malformed_jwt_is_401_with_the_usual_challenge(jwt_client, token):
    assert_invalid_token(orders(jwt_client, token))


def test_own_tokens_keep_working_beside_jwts(jwt_client):
    assert orders(jwt_client, get_token(jwt_client)).status_code == 200


def test_issuer_that_cannot_be_reached_refuses_tokens_without_an_error(make_app, idp):
    client = Client(make_app(jwt_settings(idp, **{"jwks-uri": "http://127.0.0.1:9/certs"})))
    assert_invalid_token(orders(client, idp.token()))


@pytest.mark.parametrize("extra, message", [
    ({"algorithms": "RS256, none"}, "never accepted"),
    ({"algorithms": "HS256"}, "needs"),
    ({"role-mapping.sales": "no-such-role"}, "unknown role code"),
])
def test_bad_issuer_settings_stop_startup(make_app, idp, extra, message):
    from restsvc.settings import SettingsError
    with pytest.raises(SettingsError, match=message):
        make_app(jwt_settings(idp, **extra))


def test_a_jwt_gets_no_stream_ticket_but_opens_the_feed_with_its_header(jwt_client, idp):
    token = idp.token()
    assert orders(jwt_client, token).status_code == 200       # its principal is now cached
    answer = jwt_client.post("/rest/events/tickets", headers=bearer(token))
    assert answer.status_code == 400 and answer.json["error"] == "No stream ticket"
    stream = jwt_client.get("/rest/events", query_string={"entity": "Order"},
                            headers=bearer(token), buffered=False)
    assert stream.status_code == 200 and stream.mimetype == "text/event-stream"
    stream.close()


@pytest.mark.parametrize("name", ["erin\nGET /rest/entities/User 200", "er\u200bin", "erin\x00",
                                  "\u2028erin", "", "x" * 201])
def test_a_jwt_username_no_local_user_could_have_is_an_invalid_token(jwt_client, idp, name):
    assert_invalid_token(orders(jwt_client, idp.token(preferred_username=name)))


def test_a_jwt_username_is_put_in_the_canonical_form_of_local_ones(jwt_client, idp):
    token = idp.token(preferred_username="  \uff45rin   smith ")      # fullwidth e, runs of spaces
    info = jwt_client.get("/rest/userInfo", headers=bearer(token))
    assert info.status_code == 200 and info.json["username"] == "erin smith"


def test_a_jwt_client_claim_cannot_forge_a_plain_log_line(make_app, idp, capsys, monkeypatch):
    import logging
    monkeypatch.setattr(logging.getLogger(), "handlers", [])     # restsvc's own plain handler
    app = make_app({**jwt_settings(idp, **{"client-claim": "azp"}), "svc.log.requests": True})
    client = Client(app)
    forged = "FORGED 1970-01-01 INFO restsvc.request [x] GET /admin 200"
    assert orders(client, idp.token(azp=f"spa\n{forged}")).status_code == 200
    app.observer.request_log.flush()
    err = capsys.readouterr().err
    assert "spa\\x0aFORGED" in err
    assert not [line for line in err.splitlines() if line.startswith("FORGED")]
