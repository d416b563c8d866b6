"""Driving /oauth2/authorize like a browser: PKCE pairs, the sign-in form."""
import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlsplit

SPA_REDIRECT = "http://127.0.0.1:8765/callback"


def pkce_pair():
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize_params(challenge, client_id="demo-spa", redirect_uri=SPA_REDIRECT, **extra):
    return {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
            "state": "st-123", "code_challenge": challenge, "code_challenge_method": "S256",
            **extra}


def form_token(page):
    found = re.search(r'name="request" value="([^"]+)"', page)
    return found.group(1) if found else None


def page_message(page):
    found = re.search(r'role="alert"\s*(hidden)?>([^<]*)<', page)
    return None if found is None or found.group(1) else found.group(2)


def query(location):
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def sign_in(client, challenge, username="alice", password="alice-password", **params):
    """GET the form, POST it: the answer to the POST."""
    page = client.get("/oauth2/authorize", query_string=authorize_params(challenge, **params))
    assert page.status_code == 200, page.get_data(as_text=True)
    return client.post("/oauth2/authorize", data={
        "request": form_token(page.get_data(as_text=True)),
        "username": username, "password": password})


def code_for(client, challenge, **params):
    answer = sign_in(client, challenge, **params)
    assert answer.status_code == 303, answer.get_data(as_text=True)
    return query(answer.headers["Location"])["code"]


def exchange(client, code, verifier, client_id="demo-spa", redirect_uri=SPA_REDIRECT,
             headers=None, **extra):
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
            "code_verifier": verifier, **extra}
    if headers is None:
        data["client_id"] = client_id
    return client.post("/oauth2/token", data={k: v for k, v in data.items() if v is not None},
                       headers=headers or {})
