"""The sign-in page of /oauth2/authorize: form, CSRF, CSP, language, limits."""
import logging

from werkzeug.test import Client

from signin_support import authorize_params, form_token, page_message, pkce_pair, sign_in


def open_form(client, **headers):
    _, challenge = pkce_pair()
    return client.get("/oauth2/authorize", query_string=authorize_params(challenge),
                      headers=headers)


def test_form_is_served_with_a_strict_content_security_policy(client):
    page = open_form(client)
    assert page.status_code == 200 and page.mimetype == "text/html"
    policy = page.headers["Content-Security-Policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"):
        assert directive in policy
    body = page.get_data(as_text=True)
    assert "<script" not in body and "style=" not in body and "<form" in body
    assert page.headers["Cache-Control"] == "no-store"
    assert client.get("/oauth2/signin.css").mimetype == "text/css"


def test_form_speaks_the_language_of_accept_language(client):
    body = open_form(client, **{"Accept-Language": "de-DE,de;q=0.9"}).get_data(as_text=True)
    assert '<html lang="de">' in body and "Benutzername" in body and "Passwort" in body
    assert "Username" in open_form(client).get_data(as_text=True)


def test_form_posted_without_the_browser_cookie_is_refused(app):
    browser = Client(app)
    token = form_token(open_form(browser).get_data(as_text=True))
    other = Client(app)        # another browser (a cross-site post carries no cookie)
    answer = other.post("/oauth2/authorize", data={"request": token, "username": "alice",
                                                   "password": "alice-password"})
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert "expired" in page_message(answer.get_data(as_text=True))


def test_changed_authorization_request_in_the_form_is_refused(client):
    token = form_token(open_form(client).get_data(as_text=True))
    answer = client.post("/oauth2/authorize", data={"request": token[:-3] + "AAA",
                                                    "username": "alice",
                                                    "password": "alice-password"})
    assert answer.status_code == 400 and "Location" not in answer.headers


def test_failed_sign_in_does_not_tell_whether_the_user_exists(client):
    _, challenge = pkce_pair()
    wrong_password = sign_in(client, challenge, password="wrong-password")
    no_user = sign_in(client, challenge, username="nobody-at-all")
    assert wrong_password.status_code == no_user.status_code == 400
    assert page_message(wrong_password.get_data(as_text=True)) == \
        page_message(no_user.get_data(as_text=True)) == "Invalid username or password."
    # the form comes back, ready for another try
    assert form_token(no_user.get_data(as_text=True))


def test_sign_in_limits_answer_429_with_the_form_and_a_message(make_app):
    client = Client(make_app({"svc.authserver.rate-limit.max-failures": 2}))
    _, challenge = pkce_pair()
    for _ in range(2):
        assert sign_in(client, challenge, password="wrong-password").status_code == 400
    refused = sign_in(client, challenge)       # even the right password
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    body = refused.get_data(as_text=True)
    assert "Too many failed sign-in attempts" in page_message(body) and form_token(body)


def test_application_template_replaces_the_page(make_app, tmp_path):
    template = tmp_path / "mine.html"
    template.write_text("<html><body>ACME $title <form $form_hidden action=\"$action\">"
                        "<input name=\"request\" value=\"$request\"></form></body></html>")
    client = Client(make_app({"svc.authserver.signin-template": str(template)}))
    body = open_form(client).get_data(as_text=True)
    assert body.startswith("<html><body>ACME Sign in") and form_token(body)


def test_template_with_an_unknown_placeholder_stops_startup(make_app, tmp_path):
    import pytest
    from restsvc.settings import SettingsError
    template = tmp_path / "bad.html"
    template.write_text("<p>$nonsense</p>")
    with pytest.raises(SettingsError, match="signin-template"):
        make_app({"svc.authserver.signin-template": str(template)})


def test_values_on_the_page_are_escaped(client):
    _, challenge = pkce_pair()
    answer = sign_in(client, challenge, username='<script>x</script>"', password="wrong-password")
    body = answer.get_data(as_text=True)
    assert "<script>" not in body and "&lt;script&gt;" in body


def test_no_password_or_code_in_the_log(client, caplog):
    caplog.set_level(logging.DEBUG)
    _, challenge = pkce_pair()
    answer = sign_in(client, challenge)
    code = answer.headers["Location"].split("code=")[1].split("&")[0]
    sign_in(client, challenge, password="wrong-password-xyz")
    assert "alice-password" not in caplog.text and code not in caplog.text
    assert "wrong-password-xyz" not in caplog.text


def test_malformed_form_post_is_shown_on_the_page(client):
    answer = client.post("/oauth2/authorize", data="request=a&request=b",
                         content_type="application/x-www-form-urlencoded")
    assert answer.status_code == 400 and answer.mimetype == "text/html"
    answer = client.post("/oauth2/authorize", data={})
    assert answer.status_code == 400 and "Location" not in answer.headers
