"""Refusing repeated failed authentication on /oauth2/*.

The counts live in the database, so every worker and every instance of the
service shares them. Policy: a key (a client id, a remote address or a
username) that collects ``max_failures`` failed authentications within
``window`` seconds of its first failure is refused with 429 and a
``Retry-After`` header until that window ends. While refused, credentials are
not even checked, so a correct guess tells nothing, and refused attempts do
not extend the block. Keys are stored hashed: the table never holds what a
caller typed as a username.
"""
import hashlib
import time

import peewee

from ..db import database_proxy
from ..errors import OAuthError


class AuthFailure(peewee.Model):
    key = peewee.CharField(primary_key=True, max_length=64)
    failures = peewee.IntegerField()
    window_start = peewee.BigIntegerField(index=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_auth_failure"


def failure_keys(client_id=None, address=None, username=None):
    keys = [f"{kind}:{value}" for kind, value in
            (("client", client_id), ("address", address), ("user", username)) if value]
    return sorted({hashlib.sha256(key.encode("utf-8")).hexdigest() for key in keys})


class FailureLimiter:
    def __init__(self, max_failures, window):
        self.max_failures = max_failures     # 0: no limit
        self.window = window

    def check(self, keys):
        """Raise 429 when any of the keys is blocked (one indexed read)."""
        if not self.max_failures or not keys:
            return
        now = int(time.time())
        start = (AuthFailure.select(peewee.fn.MAX(AuthFailure.window_start))
                 .where(AuthFailure.key.in_(keys),
                        AuthFailure.failures >= self.max_failures,
                        AuthFailure.window_start > now - self.window)
                 .scalar())
        if start is not None:
            retry_after = max(1, start + self.window - now)
            raise OAuthError("temporarily_unavailable",
                             "Too many failed authentication attempts; try again later",
                             status=429, headers={"Retry-After": str(retry_after)})

    def record(self, keys):
        """Count one failure against each key; one atomic upsert, so concurrent
        instances never lose a count."""
        if not self.max_failures or not keys:
            return
        now = int(time.time())
        with database_proxy.atomic():
            # Rows whose window is over count for nothing; clearing them here keeps
            # the table small and makes the upsert below a plain increment.
            AuthFailure.delete().where(AuthFailure.window_start <= now - self.window).execute()
            (AuthFailure.insert_many([{"key": key, "failures": 1, "window_start": now}
                                      for key in keys])
             .on_conflict(conflict_target=[AuthFailure.key],
                          update={AuthFailure.failures: AuthFailure.failures + 1})
             .execute())
