"""OAuth 2 endpoint logic, framework-free: token (RFC 6749), revocation
(RFC 7009) and introspection (RFC 7662).

Takes the form parameters, the Authorization header and the caller's address
as plain values and returns the JSON body, or raises OAuthError with the
RFC 6749 section 5.2 code.
"""
import base64
from urllib.parse import unquote

from ..errors import OAuthError
from .tokens import ACCESS, REFRESH, Identity
from .users import lookup_name


def _required(form, name):
    value = form.get(name)
    if not value:
        raise OAuthError("invalid_request", f"OAuth 2.0 Parameter: {name}")
    return value


class AuthServer:
    def __init__(self, clients, tokens, users, limiter, realm):
        self.clients = clients
        self.tokens = tokens
        self.users = users
        self.limiter = limiter
        self.realm = realm
        self.grants = {"client_credentials": self._client_credentials,
                       "password": self._password,
                       "refresh_token": self._refresh_token}

    def _invalid_client(self, description):
        return OAuthError("invalid_client", description, status=401,
                          headers={"WWW-Authenticate": f'Basic realm="{self.realm}"'})

    def _credentials(self, form, authorization):
        """HTTP Basic (client_secret_basic) or form fields (client_secret_post)."""
        form_id, form_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization[:6].lower() == "basic ":
            if form_secret is not None:
                raise OAuthError("invalid_request", "Use one client authentication method")
            try:
                decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
            except ValueError:     # not base64 (binascii.Error), not ASCII, not UTF-8
                raise self._invalid_client("Malformed Basic credentials") from None
            client_id, sep, secret = decoded.partition(":")
            if not sep:
                raise self._invalid_client("Malformed Basic credentials")
            # RFC 6749 2.3.1: id and secret are form-urlencoded before Basic encoding.
            return unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " "))
        if form_id is not None and form_secret is not None:
            return form_id, form_secret
        raise self._invalid_client("Client authentication is required")

    def _limited(self, kind, account, address, check, failure):
        """``check()`` within the sign-in limits (ratelimit.py): refused with 429
        before checking when the address has failed too often; ``failure``
        raised when the check finds nothing, with the wait it caused, if any."""
        attempt = self.limiter.begin(kind, account, address)
        found = None
        try:
            found = check()
        finally:
            delay = self.limiter.end(attempt, succeeded=found is not None)
        if found is None:
            if delay:
                failure.headers = {**failure.headers, "Retry-After": str(delay)}
            raise failure
        return found

    def authenticate_client(self, form, authorization, address):
        client_id, secret = self._credentials(form, authorization)
        return self._limited("client", client_id, address,
                             lambda: self.clients.authenticate(client_id, secret),
                             self._invalid_client("Client authentication failed"))

    def token(self, form, authorization, address=None):
        """``POST /oauth2/token``: the token response body."""
        client = self.authenticate_client(form, authorization, address)
        grant_type = _required(form, "grant_type")
        grant = self.grants.get(grant_type)
        if grant is None:
            raise OAuthError("unsupported_grant_type", f"Unsupported grant type: {grant_type}")
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client",
                             f"The client is not allowed to use the grant type {grant_type}")
        if form.get("scope", "").strip():
            # RFC 6749 3.3: a scope the server does not know is refused, not
            # ignored. Roles, not scopes, decide what a token may do here.
            raise OAuthError("invalid_scope", "No scopes are registered; leave out the scope "
                                              "parameter (roles decide what a token may do)")
        return grant(client, form, address)

    def _client_credentials(self, client, form, address):
        identity = Identity(client.client_id, resource_roles=client.resource_roles,
                            row_level_roles=client.row_level_roles)
        return self._issue(client, identity)

    def _password(self, client, form, address):
        username, password = _required(form, "username"), _required(form, "password")
        # Counted per user, not per client: one user's typing errors must not
        # hold back the other users of a shared client; per user by the name it
        # is looked up by, so look-alike spellings share one count. Unknown,
        # inactive or a wrong password: the same answer.
        username = lookup_name(username)
        user = self._limited("user", username, address,
                             lambda: self.users.authenticate(username, password),
                             OAuthError("invalid_grant", "Bad credentials"))
        identity = self.users.identity(user, client.client_id)
        refresh = None
        if "refresh_token" in client.grant_types:
            refresh = self.tokens.issue(REFRESH, identity, client.refresh_token_ttl)
        return self._issue(client, identity, refresh)

    def _refresh_token(self, client, form, address):
        refresh = _required(form, "refresh_token")
        info = self.tokens.lookup(refresh, REFRESH)
        if info is None or info.identity.client_id != client.client_id:
            raise OAuthError("invalid_grant", "The refresh token is invalid, expired or revoked")
        # The refresh token is reused; the new access token carries the same identity.
        return self._issue(client, info.identity, refresh)

    def _issue(self, client, identity, refresh=None):
        parent = self.tokens.hash(refresh) if refresh else None
        body = {"access_token": self.tokens.issue(ACCESS, identity, client.access_token_ttl,
                                                  parent_hash=parent)}
        if refresh:
            body["refresh_token"] = refresh
        body.update(token_type="Bearer", expires_in=client.access_token_ttl)
        return body

    def _own_token(self, form, authorization, address):
        """The client's live token named by the form, or None: another client's
        token is treated exactly like an unknown one."""
        client = self.authenticate_client(form, authorization, address)
        info = self.tokens.find(_required(form, "token"))
        if info is None or info.identity.client_id != client.client_id:
            return None
        return info

    def revoke(self, form, authorization, address=None):
        """``POST /oauth2/revoke`` (RFC 7009). ``token_type_hint`` is not needed: one
        lookup finds either kind. Unknown tokens are not an error."""
        info = self._own_token(form, authorization, address)
        if info is not None:
            self.tokens.revoke(info)

    def introspect(self, form, authorization, address=None):
        """``POST /oauth2/introspect`` (RFC 7662)."""
        info = self._own_token(form, authorization, address)
        if info is None:
            return {"active": False}
        who = info.identity
        body = {"active": True, "client_id": who.client_id,
                "username": who.username or who.client_id, "sub": who.username or who.client_id}
        if info.kind == ACCESS:
            body["token_type"] = "Bearer"
        body.update(iat=info.issued_at, exp=info.expires_at)
        return body
