"""OAuth 2 endpoint logic, framework-free: token (RFC 6749), revocation
(RFC 7009) and introspection (RFC 7662).

Takes the form parameters, the Authorization header and the caller's address
as plain values and returns the JSON body, or raises OAuthError with the
RFC 6749 section 5.2 code.
"""
import base64
import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import unquote

from ..errors import OAuthError
from ..jsonio import JsonObject
from ..settinggroups import ClientSettings
from .authcodes import CodeStore, verifier_matches
from .clients import Clients
from .ratelimit import FailureLimiter
from .tokens import ACCESS, REFRESH, ROTATED, Identity, TokenInfo, TokenStore
from .users import User, Users, lookup_name

# The fields of a form posted to an /oauth2 endpoint.
Form = Mapping[str, str]
# A grant type's part of the token endpoint: (client, form, caller's address) -> answer.
Grant = Callable[[ClientSettings, Form, str | None], JsonObject]
T = TypeVar("T")


def _required(form: Form, name: str) -> str:
    value = form.get(name)
    if not value:
        raise OAuthError("invalid_request", f"OAuth 2.0 Parameter: {name}")
    return value


def granted_scope(client: ClientSettings, requested: str | None,
                  ceiling: str | None = None) -> str | None:
    """The scopes a request gets, space-separated (RFC 6749 3.3): the subset it
    asks for, or all the client's registered scopes (``ceiling``: those already
    granted) when it asks for none. None for a client without scopes, which
    may not ask for any: roles alone decide what its tokens may do."""
    asked = (requested or "").split()
    if not client.scopes:
        if asked:
            raise OAuthError("invalid_scope", "No scopes are registered for this client; leave "
                                              "out the scope parameter (roles decide what a "
                                              "token may do)")
        return None
    allowed = client.scopes if ceiling is None else tuple(ceiling.split())
    unknown = [scope for scope in asked if scope not in allowed]
    if unknown:
        raise OAuthError("invalid_scope", f"Scope not allowed: {unknown[0]}")
    return " ".join(scope for scope in allowed if not asked or scope in asked)


BAD_CODE = "The authorization code is invalid, expired or already used"
BAD_REFRESH = "The refresh token is invalid, expired or revoked"


class AuthServer:
    def __init__(self, clients: Clients, tokens: TokenStore, codes: CodeStore, users: Users,
                 limiter: FailureLimiter, realm: str) -> None:
        self.clients = clients
        self.tokens = tokens
        self.codes = codes
        self.users = users
        self.limiter = limiter
        self.realm = realm
        self.grants: dict[str, Grant] = {"client_credentials": self._client_credentials,
                       "password": self._password,
                       "authorization_code": self._authorization_code,
                       "refresh_token": self._refresh_token}

    def enabled_grants(self) -> list[str]:
        """The grant types at least one registered client may use."""
        used = {grant for client in self.clients.all() for grant in client.grant_types}
        return [grant for grant in self.grants if grant in used]

    def _invalid_client(self, description: str) -> OAuthError:
        return OAuthError("invalid_client", description, status=401,
                          headers={"WWW-Authenticate": f'Basic realm="{self.realm}"'})

    def _credentials(self, form: Form, authorization: str | None) -> tuple[str, str | None]:
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
        if form_id is not None:
            # No secret: a public client identifies itself (auth method "none").
            return form_id, form_secret
        raise self._invalid_client("Client authentication is required")

    def limited(self, kind: str, account: str, address: str | None, check: Callable[[], T | None],
                failure: OAuthError) -> T:
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

    def authenticate_client(self, form: Form, authorization: str | None,
                            address: str | None) -> ClientSettings:
        client_id, secret = self._credentials(form, authorization)
        return self.limited("client", client_id, address,
                            lambda: self.clients.authenticate(client_id, secret),
                            self._invalid_client("Client authentication failed"))

    def token(self, form: Form, authorization: str | None, address: str | None = None
              ) -> JsonObject:
        """``POST /oauth2/token``: the token response body."""
        client = self.authenticate_client(form, authorization, address)
        grant_type = _required(form, "grant_type")
        grant = self.grants.get(grant_type)
        if grant is None:
            raise OAuthError("unsupported_grant_type", f"Unsupported grant type: {grant_type}")
        if grant_type not in client.grant_types:
            raise OAuthError("unauthorized_client",
                             f"The client is not allowed to use the grant type {grant_type}")
        return grant(client, form, address)

    def _client_credentials(self, client: ClientSettings, form: Form,
                            address: str | None) -> JsonObject:
        identity = Identity(client.client_id, resource_roles=client.resource_roles,
                            row_level_roles=client.row_level_roles,
                            scope=granted_scope(client, form.get("scope")))
        return self._issue(client, identity)

    def _password(self, client: ClientSettings, form: Form, address: str | None) -> JsonObject:
        username, password = _required(form, "username"), _required(form, "password")
        # Counted per user, not per client: one user's typing errors must not
        # hold back the other users of a shared client; per user by the name it
        # is looked up by, so look-alike spellings share one count. Unknown,
        # inactive or a wrong password: the same answer.
        username = lookup_name(username)
        user = self.limited("user", username, address,
                             lambda: self.users.authenticate(username, password),
                             OAuthError("invalid_grant", "Bad credentials"))
        scope = granted_scope(client, form.get("scope"))
        return self._sign_in(client, self.users.identity(user, client.client_id, scope))

    def _sign_in(self, client: ClientSettings, identity: Identity,
                 family: str | None = None) -> JsonObject:
        """Tokens for a new sign-in: an access token, and a refresh token when
        the client may refresh; ``family``: the code they were issued from."""
        refresh = None
        if "refresh_token" in client.grant_types:
            refresh = self.tokens.issue(REFRESH, identity, client.refresh_token_ttl,
                                        parent_hash=family)
        return self._issue(client, identity, refresh, family)

    def _authorization_code(self, client: ClientSettings, form: Form,
                            address: str | None) -> JsonObject:
        """RFC 6749 4.1.3 with PKCE (RFC 7636 4.6). Everything is checked before
        the code is spent, so a request without the verifier cannot burn it."""
        grant = self.codes.find(_required(form, "code"))
        if grant is None or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", BAD_CODE)
        if grant.used:
            # RFC 6749 4.1.2: a code used twice revokes what it was exchanged for.
            self.tokens.revoke_family(grant.code_hash)
            raise OAuthError("invalid_grant", BAD_CODE)
        if grant.expires_at <= time.time():
            raise OAuthError("invalid_grant", BAD_CODE)
        if form.get("redirect_uri", "") != grant.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri differs from the authorization request")
        if not form.get("code_verifier"):
            raise OAuthError("invalid_grant", "code_verifier is required (PKCE)")
        if not verifier_matches(form["code_verifier"], grant.code_challenge):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        user: User | None = User.get_or_none(User.id == grant.user_id)
        if not self.codes.redeem(grant):
            self.tokens.revoke_family(grant.code_hash)
            raise OAuthError("invalid_grant", BAD_CODE)
        if user is None or not user.active:
            raise OAuthError("invalid_grant", "The user can no longer sign in")
        identity = self.users.identity(user, client.client_id, grant.scope)
        return self._sign_in(client, identity, family=grant.code_hash)

    def _refresh_token(self, client: ClientSettings, form: Form,
                       address: str | None) -> JsonObject:
        refresh = _required(form, "refresh_token")
        info = self.tokens.find_any(refresh)
        if info is None or info.kind not in (REFRESH, ROTATED) \
                or info.identity.client_id != client.client_id:
            raise OAuthError("invalid_grant", BAD_REFRESH)
        if info.kind == ROTATED:
            # A refresh token exchanged already, used again: one of the two
            # holders is not the client. End the sign-in for both.
            if info.parent_hash:
                self.tokens.revoke_family(info.parent_hash)
            raise OAuthError("invalid_grant", BAD_REFRESH)
        identity = info.identity
        scope = granted_scope(client, form.get("scope"), ceiling=identity.scope)
        if scope != identity.scope:
            identity = dataclasses.replace(identity, scope=scope)
        if client.is_public:
            # RFC 9700 4.14.2: a public client's refresh token is used once.
            if not self.tokens.rotate(info):
                # A public client's refresh token always has a family (its code):
                # revoke_family(None) would end every sign-in that has none.
                if info.parent_hash:
                    self.tokens.revoke_family(info.parent_hash)
                raise OAuthError("invalid_grant", BAD_REFRESH)
            return self._sign_in(client, identity, family=info.parent_hash)
        # A confidential client keeps its refresh token; the new access token
        # carries the same identity (or fewer scopes).
        return self._issue(client, identity, refresh)

    def _issue(self, client: ClientSettings, identity: Identity, refresh: str | None = None,
               family: str | None = None) -> JsonObject:
        parent = self.tokens.hash(refresh) if refresh else family
        body: JsonObject = {"access_token": self.tokens.issue(ACCESS, identity, client.access_token_ttl,
                                                  parent_hash=parent)}
        if refresh:
            body["refresh_token"] = refresh
        body.update(token_type="Bearer", expires_in=client.access_token_ttl)
        if identity.scope is not None:
            body["scope"] = identity.scope
        return body

    def _own_token(self, form: Form, authorization: str | None,
                   address: str | None) -> TokenInfo | None:
        """The client's live token named by the form, or None: another client's
        token is treated exactly like an unknown one."""
        client = self.authenticate_client(form, authorization, address)
        info = self.tokens.find(_required(form, "token"))
        if info is None or info.identity.client_id != client.client_id:
            return None
        return info

    def revoke(self, form: Form, authorization: str | None, address: str | None = None) -> None:
        """``POST /oauth2/revoke`` (RFC 7009). ``token_type_hint`` is not needed: one
        lookup finds either kind. Unknown tokens are not an error."""
        info = self._own_token(form, authorization, address)
        if info is not None:
            self.tokens.revoke(info)

    def introspect(self, form: Form, authorization: str | None,
                   address: str | None = None) -> JsonObject:
        """``POST /oauth2/introspect`` (RFC 7662)."""
        info = self._own_token(form, authorization, address)
        if info is None:
            return {"active": False}
        who = info.identity
        body: JsonObject = {"active": True, "client_id": who.client_id,
                "username": who.username or who.client_id, "sub": who.username or who.client_id}
        if info.kind == ACCESS:
            body["token_type"] = "Bearer"
        body.update(iat=info.issued_at, exp=info.expires_at)
        return body

    def metadata(self, issuer: str, auth_path: str = "/oauth2") -> JsonObject:
        """RFC 8414 authorization server metadata: exactly what is enabled
        (``auth_path``: where the endpoints are, svc.authserver.base-path)."""
        endpoints = issuer + auth_path
        grants = self.enabled_grants()
        clients = self.clients.all()
        auth_methods = ["client_secret_basic", "client_secret_post"]
        if any(client.is_public for client in clients):
            auth_methods.append("none")
        body: JsonObject = {"issuer": issuer, "token_endpoint": f"{endpoints}/token"}
        if "authorization_code" in grants:
            body.update(authorization_endpoint=f"{endpoints}/authorize",
                        response_types_supported=["code"], response_modes_supported=["query"],
                        code_challenge_methods_supported=["S256"],
                        authorization_response_iss_parameter_supported=True)
        else:
            body["response_types_supported"] = []
        body.update(grant_types_supported=grants,
                    token_endpoint_auth_methods_supported=auth_methods,
                    revocation_endpoint=f"{endpoints}/revoke",
                    revocation_endpoint_auth_methods_supported=auth_methods,
                    introspection_endpoint=f"{endpoints}/introspect",
                    introspection_endpoint_auth_methods_supported=auth_methods)
        scopes = sorted({scope for client in clients for scope in client.scopes})
        if scopes:
            body["scopes_supported"] = scopes
        return body
