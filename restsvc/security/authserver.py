"""OAuth 2 token endpoint logic, framework-free (RFC 6749).

Takes the form parameters and the Authorization header as plain values and
returns the JSON body, or raises OAuthError with the RFC 6749 section 5.2 code.
"""
import base64
import binascii
from urllib.parse import unquote

from ..errors import OAuthError
from .tokens import ACCESS


class AuthServer:
    def __init__(self, clients, tokens, realm):
        self.clients = clients
        self.tokens = tokens
        self.realm = realm
        self.grants = {"client_credentials": self._client_credentials}

    def _invalid_client(self, description):
        return OAuthError("invalid_client", description, status=401,
                          headers={"WWW-Authenticate": f'Basic realm="{self.realm}"'})

    def authenticate_client(self, form, authorization):
        """HTTP Basic (client_secret_basic) or form fields (client_secret_post)."""
        form_id, form_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization[:6].lower() == "basic ":
            if form_secret is not None:
                raise OAuthError("invalid_request", "Use one client authentication method")
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise self._invalid_client("Malformed Basic credentials") from None
            client_id, sep, secret = decoded.partition(":")
            if not sep:
                raise self._invalid_client("Malformed Basic credentials")
            # RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
            client_id, secret = unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))
        elif form_id is not None and form_secret is not None:
            client_id, secret = form_id, form_secret
        else:
            raise self._invalid_client("Client authentication is required")
        client = self.clients.authenticate(client_id, secret)
        if client is None:
            raise self._invalid_client("Client authentication failed")
        return client

    def token(self, form, authorization):
        """``POST /oauth2/token``: the token response body."""
        client = self.authenticate_client(form, authorization)
        grant_type = form.get("grant_type")
        if not grant_type:
            raise OAuthError("invalid_request", "OAuth 2.0 Parameter: grant_type")
        grant = self.grants.get(grant_type)
        if grant is None:
            raise OAuthError("unsupported_grant_type", f"Unsupported grant type: {grant_type}")
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client",
                             f"The client is not allowed to use the grant type {grant_type}")
        return grant(client, form)

    def _client_credentials(self, client, form):
        token = self.tokens.issue(ACCESS, client.client_id, client.access_token_ttl,
                                  resource_roles=client.resource_roles,
                                  row_level_roles=client.row_level_roles)
        return {"access_token": token, "token_type": "Bearer",
                "expires_in": client.access_token_ttl}
