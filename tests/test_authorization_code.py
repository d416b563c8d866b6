"""The authorization code grant with PKCE (RFC 6749 4.1, RFC 7636): codes,
redirect URIs, refresh token rotation and family revocation."""
import pytest

from conftest import basic, bearer
from signin_support import (SPA_REDIRECT, authorize_params, code_for, exchange, pkce_pair,
                            query, sign_in)


def refresh(client, token, client_id="demo-spa", **extra):
    return client.post("/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": token,
                                              "client_id": client_id, **extra})


def test_code_with_verifier_gives_tokens_of_the_user(client):
    verifier, challenge = pkce_pair()
    answer = sign_in(client, challenge)
    assert answer.status_code == 303
    location = answer.headers["Location"]
    assert location.startswith(SPA_REDIRECT + "?")
    assert query(location)["state"] == "st-123" and query(location)["iss"] == "http://localhost"
    tokens = exchange(client, query(location)["code"], verifier)
    assert tokens.status_code == 200, tokens.json
    assert tokens.headers["Cache-Control"] == "no-store"
    assert set(tokens.json) == {"access_token", "refresh_token", "token_type", "expires_in"}
    info = client.get("/rest/userInfo", headers=bearer(tokens.json["access_token"]))
    assert info.status_code == 200 and info.json["username"] == "alice"


def test_missing_code_verifier_is_invalid_grant(client):
    _, challenge = pkce_pair()
    answer = exchange(client, code_for(client, challenge), None)
    assert answer.status_code == 400 and answer.json["error"] == "invalid_grant"


def test_wrong_code_verifier_is_invalid_grant_and_leaves_the_code_usable(client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    wrong = exchange(client, code, pkce_pair()[0])
    assert wrong.status_code == 400 and wrong.json["error"] == "invalid_grant"
    assert exchange(client, code, verifier).status_code == 200


def test_redirect_uri_must_match_the_authorization_request(client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    answer = exchange(client, code, verifier, redirect_uri="http://127.0.0.1:9999/callback")
    assert answer.json["error"] == "invalid_grant"


def test_plain_pkce_is_refused_with_a_redirect(client):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize", query_string=authorize_params(
        challenge, code_challenge_method="plain"))
    assert answer.status_code == 303
    sent = query(answer.headers["Location"])
    assert sent["error"] == "invalid_request" and sent["state"] == "st-123"


def test_missing_code_challenge_is_refused_with_a_redirect(client):
    params = authorize_params("x")
    del params["code_challenge"], params["code_challenge_method"]
    answer = client.get("/oauth2/authorize", query_string=params)
    assert query(answer.headers["Location"])["error"] == "invalid_request"


def test_unsupported_response_type_is_redirected(client):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize",
                        query_string=authorize_params(challenge, response_type="token"))
    assert query(answer.headers["Location"])["error"] == "unsupported_response_type"


@pytest.mark.parametrize("redirect_uri", [
    "http://127.0.0.1:8080/callback", "http://127.0.0.1/callback", "http://[::1]:43123/callback"])
def test_loopback_redirect_uris_match_at_any_port(client, redirect_uri):
    verifier, challenge = pkce_pair()
    answer = sign_in(client, challenge, redirect_uri=redirect_uri)
    assert answer.status_code == 303 and answer.headers["Location"].startswith(redirect_uri + "?")


@pytest.mark.parametrize("redirect_uri", [
    "http://localhost:8080/callback", "http://127.0.0.1:8080/callback/x",
    "http://127.0.0.1:8080/callback?x=1", "https://127.0.0.1/callback",
    "http://evil.example@127.0.0.1:80/callback", "http://127.0.0.1:80:81/callback",
    "http://127.0.0.2/callback"])
def test_other_redirect_uris_are_shown_on_the_page_never_redirected(client, redirect_uri):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize",
                        query_string=authorize_params(challenge, redirect_uri=redirect_uri))
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert "not registered" in answer.get_data(as_text=True)


def test_unknown_client_is_shown_on_the_page(client):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize",
                        query_string=authorize_params(challenge, client_id="nobody"))
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert 'id="signin"' in answer.get_data(as_text=True)     # the form is there, hidden
    assert 'method="post" action="/oauth2/authorize" hidden' in answer.get_data(as_text=True)


def test_client_without_the_grant_is_redirected_unauthorized(make_app):
    from werkzeug.test import Client
    prefix = "svc.authserver.client.other."
    app = make_app({prefix + "client-id": "other", prefix + "client-secret": "other-secret",
                    prefix + "redirect-uris": "https://app.example/cb"})
    _, challenge = pkce_pair()
    answer = Client(app).get("/oauth2/authorize", query_string=authorize_params(
        challenge, client_id="other", redirect_uri="https://app.example/cb"))
    assert query(answer.headers["Location"])["error"] == "unauthorized_client"


def test_code_is_single_use_and_reuse_revokes_its_tokens(client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    tokens = exchange(client, code, verifier).json
    again = exchange(client, code, verifier)
    assert again.status_code == 400 and again.json["error"] == "invalid_grant"
    assert client.get("/rest/userInfo", headers=bearer(tokens["access_token"])).status_code == 401
    assert refresh(client, tokens["refresh_token"]).json["error"] == "invalid_grant"


def test_code_expires(client, monkeypatch):
    from restsvc.security import authcodes
    verifier, challenge = pkce_pair()
    monkeypatch.setattr(authcodes, "CODE_TTL", -1)
    code = code_for(client, challenge)
    assert exchange(client, code, verifier).json["error"] == "invalid_grant"


def test_code_of_one_client_is_refused_to_another(client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    answer = exchange(client, code, verifier, headers={"Authorization": basic("demo-web",
                                                                            "demo-web-secret")})
    assert answer.json["error"] == "invalid_grant"


def test_public_client_refresh_tokens_rotate(client):
    verifier, challenge = pkce_pair()
    first = exchange(client, code_for(client, challenge), verifier).json
    second = refresh(client, first["refresh_token"])
    assert second.status_code == 200
    assert second.json["refresh_token"] != first["refresh_token"]
    third = refresh(client, second.json["refresh_token"])
    assert third.status_code == 200
    assert client.get("/rest/userInfo", headers=bearer(third.json["access_token"])).status_code == 200


def test_reused_rotated_refresh_token_revokes_the_whole_family(client):
    verifier, challenge = pkce_pair()
    first = exchange(client, code_for(client, challenge), verifier).json
    second = refresh(client, first["refresh_token"]).json
    replay = refresh(client, first["refresh_token"])
    assert replay.status_code == 400 and replay.json["error"] == "invalid_grant"
    assert client.get("/rest/userInfo", headers=bearer(second["access_token"])).status_code == 401
    assert refresh(client, second["refresh_token"]).json["error"] == "invalid_grant"


def test_other_sign_ins_survive_a_family_revocation(client):
    verifier, challenge = pkce_pair()
    other_verifier, other_challenge = pkce_pair()
    other = exchange(client, code_for(client, other_challenge), other_verifier).json
    first = exchange(client, code_for(client, challenge), verifier).json
    refresh(client, first["refresh_token"])
    refresh(client, first["refresh_token"])
    assert client.get("/rest/userInfo", headers=bearer(other["access_token"])).status_code == 200


def test_sign_out_revokes_the_sign_in(client):
    verifier, challenge = pkce_pair()
    tokens = exchange(client, code_for(client, challenge), verifier).json
    answer = client.post("/oauth2/revoke", data={"token": tokens["refresh_token"],
                                                 "client_id": "demo-spa"})
    assert answer.status_code == 200
    assert client.get("/rest/userInfo", headers=bearer(tokens["access_token"])).status_code == 401


def test_public_client_sending_a_secret_is_refused(client):
    verifier, challenge = pkce_pair()
    answer = exchange(client, code_for(client, challenge), verifier, client_secret="guess")
    assert answer.status_code == 401 and answer.json["error"] == "invalid_client"


def test_confidential_client_must_authenticate(client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge, client_id="demo-web",
                    redirect_uri="http://127.0.0.1/callback")
    answer = exchange(client, code, verifier, client_id="demo-web",
                      redirect_uri="http://127.0.0.1/callback")
    assert answer.status_code == 401 and answer.json["error"] == "invalid_client"
    answer = exchange(client, code, verifier, redirect_uri="http://127.0.0.1/callback",
                      headers={"Authorization": basic("demo-web", "demo-web-secret")})
    assert answer.status_code == 200 and answer.json["scope"] == "read write"


def test_disabled_user_gets_no_tokens_for_an_open_code(app, client):
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    app.users.set_active("alice", False)
    assert exchange(client, code, verifier).json["error"] == "invalid_grant"


def test_codes_and_tokens_are_stored_only_hashed(app, client):
    from restsvc.security.authcodes import AuthorizationCode
    from restsvc.security.tokens import StoredToken
    verifier, challenge = pkce_pair()
    code = code_for(client, challenge)
    stored = [row.code_hash for row in AuthorizationCode.select()]
    assert code not in stored and app.tokens.hash(code) in stored
    tokens = exchange(client, code, verifier).json
    hashes = {row.token_hash for row in StoredToken.select()}
    assert tokens["access_token"] not in hashes and app.tokens.hash(tokens["access_token"]) in hashes


@pytest.mark.parametrize("client_settings, message", [
    ({"client-id": "p", "authorization-grant-types": "client_credentials"}, "without a client-secret"),
    ({"client-id": "p", "authorization-grant-types": "authorization_code"}, "redirect-uris"),
    ({"client-id": "p", "client-secret": "s", "scopes": "admin"}, "unknown scope"),
    ({"client-id": "p", "redirect-uris": "app.example/cb"}, "redirect-uris"),
])
def test_bad_client_registrations_stop_startup(make_app, client_settings, message):
    from restsvc.settings import SettingsError
    with pytest.raises(SettingsError, match=message):
        make_app({"svc.authserver.client": {"p": client_settings}})
