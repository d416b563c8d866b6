"""Third-party OAuth client libraries (Authlib, requests-oauthlib) complete the
authorization code flow with PKCE against a real gunicorn, posting the
sign-in form with their session as a browser would."""
import pytest

from signin_support import form_token

requests = pytest.importorskip("requests")
REDIRECT = "http://127.0.0.1:8765/callback"


@pytest.fixture(scope="module")
def server(tmp_path_factory, request):
    from conftest import PG_URL
    from servers import gunicorn_server
    if PG_URL:
        url = request.getfixturevalue("pg_schema_url")
    else:
        path = tmp_path_factory.mktemp("oauth-clients") / "restsvc.db"
        import shutil
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        url = f"sqlite:///{path}"
    with gunicorn_server(tmp_path_factory.mktemp("server"), url) as running:
        yield running.base_url


def sign_in_with(session, authorization_url, **no_token):
    """What a user does in the browser: open the page, fill in the form."""
    page = session.get(authorization_url, **no_token)
    assert page.status_code == 200, page.text
    answer = session.post(page.url.split("?")[0], allow_redirects=False, **no_token, data={
        "request": form_token(page.text), "username": "alice", "password": "alice-password"})
    assert answer.status_code == 303, answer.text
    return answer.headers["Location"]


def authlib_sign_in(server, *client, redirect_uri=REDIRECT, **options):
    """(session, token) of an Authlib client through the PKCE flow and the form."""
    authlib = pytest.importorskip("authlib.integrations.requests_client")
    from authlib.common.security import generate_token
    session = authlib.OAuth2Session(*client, redirect_uri=redirect_uri,
                                    code_challenge_method="S256", **options)
    verifier = generate_token(64)
    url, state = session.create_authorization_url(f"{server}/oauth2/authorize",
                                                  code_verifier=verifier)
    location = sign_in_with(session, url, withhold_token=True)
    token = session.fetch_token(f"{server}/oauth2/token", authorization_response=location,
                                code_verifier=verifier, state=state)
    return session, token


def test_authlib_completes_the_pkce_flow_and_refreshes(server):
    session, token = authlib_sign_in(server, "demo-spa", token_endpoint_auth_method="none")
    assert session.get(f"{server}/rest/userInfo").json()["username"] == "alice"
    refreshed = session.refresh_token(f"{server}/oauth2/token")
    assert refreshed["refresh_token"] != token["refresh_token"]
    assert session.get(f"{server}/rest/entities/Order").status_code == 200


def test_requests_oauthlib_completes_the_pkce_flow(server, monkeypatch):
    oauthlib = pytest.importorskip("requests_oauthlib")
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")     # the test server speaks http
    session = oauthlib.OAuth2Session("demo-spa", redirect_uri=REDIRECT, pkce="S256")
    url, _ = session.authorization_url(f"{server}/oauth2/authorize")
    location = sign_in_with(session, url)
    token = session.fetch_token(f"{server}/oauth2/token", authorization_response=location,
                                include_client_id=True)
    assert token["token_type"] == "Bearer"
    assert session.get(f"{server}/rest/userInfo").json()["username"] == "alice"


def test_confidential_client_with_scopes_via_authlib(server):
    session, token = authlib_sign_in(server, "demo-web", "demo-web-secret",
                                     redirect_uri="http://127.0.0.1/callback", scope="read")
    assert token["scope"] == "read"
    assert session.get(f"{server}/rest/entities/Order").status_code == 200
    assert session.post(f"{server}/rest/entities/Customer",
                        json={"name": "n", "email": "n@x.example"}).status_code == 403
