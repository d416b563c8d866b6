"""Authorization codes (RFC 6749 4.1) with PKCE (RFC 7636, S256 only).

A code is a random string handed to the client through the browser; like a
token, only its keyed hash is stored. It lives ``CODE_TTL`` seconds and is
redeemed once: redeeming marks it used in one conditional statement, so of
two requests racing with one code only one wins. A used code is kept until
``KEEP_USED`` after its expiry so that its reuse is recognised: the tokens
issued from it (the family, ``TokenStore.revoke_family``) are revoked then.
"""
import base64
import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass

import peewee

from ..db import database_proxy
from .tokens import TokenStore

CODE_TTL = 60          # seconds; RFC 6749 4.1.2 recommends at most 10 minutes
KEEP_USED = 3600       # seconds a used or expired code is remembered for reuse detection
# RFC 7636 4.1: 43 to 128 unreserved characters; S256 of one is 43 base64url characters.
VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}\Z")
CHALLENGE = re.compile(r"[A-Za-z0-9\-_]{43}\Z")


class AuthorizationCode(peewee.Model):
    code_hash = peewee.CharField(primary_key=True, max_length=64)
    client_id = peewee.CharField(max_length=200)
    # As the authorization request sent it ("" when it left it out): the token
    # request must send the same (RFC 6749 4.1.3).
    redirect_uri = peewee.TextField()
    code_challenge = peewee.CharField(max_length=64)
    user_id = peewee.CharField(max_length=36)
    scope = peewee.CharField(max_length=200, null=True)
    expires_at = peewee.BigIntegerField(index=True)
    used = peewee.BooleanField(default=False)

    class Meta:
        database = database_proxy
        table_name = "restsvc_authorization_code"


@dataclass(frozen=True)
class Grant:
    """What the user approved: the code's record."""
    code_hash: str
    client_id: str
    redirect_uri: str
    code_challenge: str
    user_id: str
    scope: str | None
    expires_at: int
    used: bool


def s256(verifier: str) -> str:
    """The S256 code challenge of a verifier (RFC 7636 4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def verifier_matches(verifier: str | None, challenge: str) -> bool:
    return verifier is not None and bool(VERIFIER.match(verifier)) and hmac.compare_digest(s256(verifier), challenge)


class CodeStore:
    def __init__(self, tokens: TokenStore) -> None:
        self.tokens = tokens        # for the one keyed hash

    def issue(self, client_id: str, redirect_uri: str, code_challenge: str, user_id: object,
              scope: str | None) -> str:
        code = secrets.token_urlsafe(32)
        now = int(time.time())
        AuthorizationCode.delete().where(AuthorizationCode.expires_at <= now - KEEP_USED).execute()
        AuthorizationCode.insert(
            code_hash=self.tokens.hash(code), client_id=client_id, redirect_uri=redirect_uri,
            code_challenge=code_challenge, user_id=str(user_id), scope=scope,
            expires_at=now + CODE_TTL).execute()
        return code

    def find(self, code: str | None) -> Grant | None:
        """The code's record (used or not, expired or not), or None."""
        if not code or len(code) > 512:
            return None
        row = AuthorizationCode.get_or_none(AuthorizationCode.code_hash == self.tokens.hash(code))
        if row is None:
            return None
        return Grant(row.code_hash, row.client_id, row.redirect_uri, row.code_challenge,
                     row.user_id, row.scope, row.expires_at, row.used)

    @staticmethod
    def redeem(grant: Grant) -> bool:
        """Mark the code used; False when another request did first."""
        count: int = AuthorizationCode.update(used=True).where(
            AuthorizationCode.code_hash == grant.code_hash,
            AuthorizationCode.used == False).execute()      # noqa: E712 (SQL, not Python)
        return count == 1
