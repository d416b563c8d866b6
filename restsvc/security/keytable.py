"""The table of API keys (personal access tokens): a row per key, its secret
kept only as the token store's keyed hash. security/apikeys.py reads and
writes it; this module is what the user hooks (users.py) need to end a
user's keys, apart so that they do not import the key store.
"""
import peewee

from ..db import database_proxy
from .tokens import TokenStore, user_key


class ApiKey(peewee.Model):
    id = peewee.CharField(primary_key=True, max_length=36)
    token_hash = peewee.CharField(max_length=64, unique=True)
    name = peewee.CharField(max_length=100)
    # A user's key names the user (the key speaks with the user's roles as
    # they are now); a client's key names the client (user_id None).
    user_id = peewee.UUIDField(null=True, index=True)
    client_id = peewee.CharField(max_length=200, null=True, index=True)
    # Granted scopes, space-separated; None: the owner's roles alone decide.
    scope = peewee.CharField(max_length=200, null=True)
    created_by = peewee.CharField(max_length=200)       # a username or a client id
    created_at = peewee.BigIntegerField()               # epoch seconds, as the token store
    expires_at = peewee.BigIntegerField(null=True)      # None: until revoked
    last_used_at = peewee.BigIntegerField(null=True)    # written at most once a minute

    class Meta:
        database = database_proxy
        table_name = "restsvc_api_key"


def revoke_user_keys(user_id: object) -> int:
    """Every key of a user (a new password, disabled, deleted). The gate
    forgets what it read of them at once here, within its recheck time elsewhere."""
    count: int = ApiKey.delete().where(ApiKey.user_id == user_key(user_id)).execute()
    TokenStore._changed()
    return count
