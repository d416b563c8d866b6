"""Webhook subscriptions: who gets which events, signed how, sent where.

A subscription comes from the settings (``svc.webhooks.subscription.<name>.*``,
written to the table when the application starts) or from ``POST
/rest/webhooks`` (grant ``rest.webhooks``; ``system-full-access`` has it). It
names a URL, entities, kinds and a secret; the secret signs each delivery
and is never answered, listed or logged.

The signature: ``Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>" with the secret>`` (Stripe's and GitHub's scheme: the time
inside the signed text lets a receiver refuse old replays).

Only ``http(s)`` URLs; loopback, link-local, private, multicast and other
non-public addresses are refused at registration (400) and again at every
delivery (a name can resolve elsewhere later), unless
``svc.webhooks.allow-private-addresses``.
"""
import hashlib
import hmac
import ipaddress
import socket
import uuid
from urllib.parse import urlsplit

import peewee

from ..db import database_proxy
from ..errors import BadRequest, Conflict, NotFound
from ..jsonio import dumps, loads
from ..model.datatypes import format_utc_instant
from ..model.fields import DateTimeField
from .outbox import KINDS, position

GRANT = "rest.webhooks"
SETTINGS_PREFIX = "settings:"       # the id of a subscription of the settings
MIN_SECRET = 16


class WebhookSubscription(peewee.Model):
    id = peewee.CharField(primary_key=True, max_length=255)
    url = peewee.CharField(max_length=2048)
    entities = peewee.TextField()                   # JSON list of entity names
    kinds = peewee.TextField()                      # JSON list of kinds
    secret = peewee.CharField(max_length=1024)
    createdDate = DateTimeField()
    after = peewee.BigIntegerField(default=0)       # events up to this id are handed out

    class Meta:
        database = database_proxy
        table_name = "restsvc_webhook"


def as_json(row):
    """What the API shows of a subscription: never its secret."""
    return {"id": row.id, "url": row.url, "entities": loads(row.entities),
            "kinds": loads(row.kinds), "createdDate": format_utc_instant(row.createdDate),
            "fromSettings": row.id.startswith(SETTINGS_PREFIX)}


# -- registration ----------------------------------------------------------------
def checked(metadata, body, allow_private):
    """(url, entities, kinds, secret) of a registration body; 400 on anything wrong."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid webhook", "The body must be a JSON object")
    url, entities = body.get("url"), body.get("entities")
    kinds, secret = body.get("kinds", list(KINDS)), body.get("secret")
    if not isinstance(url, str) or len(url) > 2048:
        raise BadRequest("Invalid webhook", "url: an http or https URL is required")
    if not isinstance(entities, list) or not entities or \
            not all(isinstance(name, str) for name in entities):
        raise BadRequest("Invalid webhook", "entities: a list of entity names is required")
    for name in entities:
        meta = metadata.entity(name)
        if meta is None or not meta.events:
            raise BadRequest("Invalid webhook", f"entities: {name} is not an entity "
                                                f"that publishes events")
    if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(KINDS) or \
            not all(isinstance(kind, str) for kind in kinds):
        raise BadRequest("Invalid webhook", f"kinds: a list of {', '.join(KINDS)}")
    if not isinstance(secret, str) or len(secret) < MIN_SECRET or len(secret) > 1024:
        raise BadRequest("Invalid webhook", f"secret: at least {MIN_SECRET} characters")
    check_address(url, allow_private)       # last: it asks the resolver
    return url, list(dict.fromkeys(entities)), list(dict.fromkeys(kinds)), secret


def create(database, url, entities, kinds, secret, key=None):
    """A new subscription (``key``: the id); it gets the events committed from now on."""
    from ..data.access import utc_now
    row = WebhookSubscription.create(
        id=key or str(uuid.uuid4()), url=url, entities=dumps(entities), kinds=dumps(kinds),
        secret=secret, createdDate=utc_now(), after=position(database))
    return row


def listed():
    """Every subscription, the oldest first."""
    return list(WebhookSubscription.select().order_by(WebhookSubscription.createdDate))


def find(key):
    row = WebhookSubscription.get_or_none(WebhookSubscription.id == key)
    if row is None:
        raise NotFound("Webhook not found", f"Webhook {key} not found")
    return row


def delete(key):
    from .delivery import WebhookDelivery
    row = find(key)
    if row.id.startswith(SETTINGS_PREFIX):
        raise Conflict("Webhook of the settings", "Remove it from the settings instead")
    WebhookDelivery.delete().where(WebhookDelivery.subscription == key).execute()
    row.delete_instance()


def sync_settings(database, metadata, subscriptions, allow_private):
    """Write the settings' subscriptions to the table (new ones start now);
    drop those no longer in the settings."""
    from ..settings import SettingsError
    names = set()
    for sub in subscriptions:
        body = {"url": sub.url, "entities": list(sub.entities), "kinds": list(sub.kinds),
                "secret": sub.secret}
        try:
            url, entities, kinds, secret = checked(metadata, body, allow_private)
        except BadRequest as exc:
            raise SettingsError(f"svc.webhooks.subscription.{sub.name}: {exc.details}") from None
        key = SETTINGS_PREFIX + sub.name
        names.add(key)
        with database.atomic():
            updated = WebhookSubscription.update(
                url=url, entities=dumps(entities), kinds=dumps(kinds), secret=secret).where(
                WebhookSubscription.id == key).execute()
            if not updated:
                create(database, url, entities, kinds, secret, key)
    WebhookSubscription.delete().where(
        WebhookSubscription.id.startswith(SETTINGS_PREFIX)
        & WebhookSubscription.id.not_in(list(names) or [""])).execute()


# -- delivery --------------------------------------------------------------------
def signature(secret, body, timestamp):
    """The ``Svc-Signature`` header's value for a body sent at ``timestamp``."""
    signed = f"{int(timestamp)}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={int(timestamp)},v1={digest}"


def check_address(url, allow_private):
    """(scheme, host, port, the address to connect to) of a URL that may be
    called; 400 when the scheme is not http(s), the host does not resolve, or
    it resolves to a non-public address (unless ``allow_private``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest("Invalid webhook", "url: only http and https URLs")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError):
        raise BadRequest("Invalid webhook", "url: the host does not resolve") from None
    addresses = [info[4][0] for info in infos]
    if not allow_private:
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%")[0])
            if not ip.is_global or ip.is_multicast:
                raise BadRequest("Invalid webhook", "url: the host is a loopback, link-local "
                                                    "or private address")
    return parts.scheme, parts.hostname, port, addresses[0]
