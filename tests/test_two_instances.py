"""Two real service instances on one PostgreSQL database share tokens and revocations."""
import json
import time

import pytest

from conftest import PG_URL, http, http_form


@pytest.mark.skipif(not PG_URL, reason="needs PostgreSQL (RESTSVC_TEST_DATABASE_URL): "
                    "instances share tokens through a database server; SQLite is one local file")
def test_a_token_from_one_instance_works_on_the_other_and_revocation_is_seen_at_once(
        start_servers):
    first, second = start_servers(2, workers=1)
    status, body = http_form(f"{first}/oauth2/token", {"grant_type": "password",
                                                       "username": "alice",
                                                       "password": "alice-password"})
    assert status == 200
    access = {"Authorization": f"Bearer {body['access_token']}"}
    status, info = http("GET", f"{second}/rest/userInfo", headers=access)
    assert status == 200 and json.loads(info)["username"] == "alice"
    status, refreshed = http_form(f"{second}/oauth2/token", {
        "grant_type": "refresh_token", "refresh_token": body["refresh_token"]})
    assert status == 200

    status, _ = http_form(f"{first}/oauth2/revoke", {"token": body["access_token"]})
    assert status == 200
    revoked_at = time.monotonic()
    while http("GET", f"{second}/rest/userInfo", headers=access)[0] != 401:
        assert time.monotonic() - revoked_at < 1, "the second instance still accepts the token"
        time.sleep(0.05)
    # The other sign-in's token is untouched.
    status, _ = http("GET", f"{second}/rest/userInfo",
                     headers={"Authorization": f"Bearer {refreshed['access_token']}"})
    assert status == 200
