"""A redirect URI is compared and redirected to as the same value: control
characters and spaces (which the URL parser drops), and URIs the parser
cannot read (an unclosed IPv6 bracket), are a 400 on the page."""
import pytest

from conftest import make_settings
from restsvc.settings import SettingsError
from signin_support import authorize_params, pkce_pair

ODD = ["http://127.0.0.1/call\r\nback", "http://127.0.0.1:8765/call\tback",
       "http://127.0.0.1/callback\n", " http://127.0.0.1/callback", "http://127.0.0.1/callback\x00",
       "\x01http://127.0.0.1/callback"]
UNREADABLE = ["http://[::1/callback", "http://127.0.0.1]/callback", "http://[127.0.0.1/callback",
              "http://[v1.x]/callback"]


@pytest.mark.parametrize("redirect_uri", ODD + UNREADABLE)
@pytest.mark.parametrize("response_type", ["code", "token"])
def test_control_characters_or_an_unreadable_redirect_uri_are_a_400_on_the_page(
        client, redirect_uri, response_type):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize", query_string=authorize_params(
        challenge, redirect_uri=redirect_uri, response_type=response_type))
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert "Location" not in answer.headers


def test_the_loopback_uri_at_another_port_is_still_accepted(client):
    _, challenge = pkce_pair()
    answer = client.get("/oauth2/authorize", query_string=authorize_params(
        challenge, redirect_uri="http://127.0.0.1:9999/callback", response_type="token"))
    assert answer.status_code == 303
    assert answer.headers["Location"].startswith("http://127.0.0.1:9999/callback?error=")


def test_a_registered_redirect_uri_with_a_control_character_is_refused_at_startup(tmp_path):
    prefix = "svc.authserver.client.odd."
    with pytest.raises(SettingsError, match="redirect-uris"):
        make_settings("sqlite:///" + str(tmp_path / "x.db"), str(tmp_path), {
            prefix + "client-id": "odd", prefix + "authorization-grant-types": "authorization_code",
            prefix + "redirect-uris": "http://127.0.0.1/call\x7fback"})
