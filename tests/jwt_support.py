"""JWT callers without an identity provider's server: an issuer that signs
with a shared secret (HS256), for tests about who a JWT caller is."""
import time

ISSUER = "https://idp.example.test/realms/shared"
AUDIENCE = "restsvc-api"
SECRET = "a-shared-secret-of-enough-length-32b"


def hs256_settings(**role_mapping):
    """Settings of the issuer; ``role_mapping``: the token's role -> restsvc role codes."""
    prefix = "svc.resource-server.jwt.shared."
    mapping = role_mapping or {"sales": "rest-minimal, sales-reader",
                               "admins": "rest-minimal, system-full-access"}
    return {prefix + "issuer": ISSUER, prefix + "audiences": AUDIENCE,
            prefix + "algorithms": "HS256", prefix + "secret": SECRET,
            prefix + "username-claim": "preferred_username", prefix + "roles-claim": "roles",
            **{f"{prefix}role-mapping.{role}": codes for role, codes in mapping.items()}}


def hs256_headers(subject, username, roles=("sales",)):
    """Authorization headers with a token of the issuer for this subject."""
    import jwt
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "preferred_username": username,
              "exp": int(time.time()) + 300, "roles": list(roles)}
    return {"Authorization": f"Bearer {jwt.encode(claims, SECRET, algorithm='HS256')}"}
