"""Webhook subscriptions: who gets which events, signed how, sent where.

A subscription comes from the settings (``svc.webhooks.subscription.<name>.*``,
written to the table when the application starts) or from ``POST
/rest/webhooks`` (grant ``rest.webhooks``; ``system-full-access`` has it). It
names a URL, entities, kinds and a secret; the secret signs each delivery
and is never answered, listed or logged. A subscription to one entity may
add a ``filter`` (the Entities API's JSON; matching.py judges the events),
checked with the registering caller's permissions (``check_filter``; one of
the settings with every permission).

The signature: ``Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>" with the secret>`` (Stripe's and GitHub's scheme: the time
inside the signed text lets a receiver refuse old replays).

A URL is normalised when it is registered (``normalised_url``): the host
IDNA-encoded, non-ASCII and other characters a request line cannot carry
percent-encoded, the fragment dropped; a user name or password, a bad port
or host name is refused (400). Only ``http(s)`` URLs; loopback, link-local, private, multicast and other
non-public addresses are refused at registration (400) and again at every
delivery (a name can resolve elsewhere later), unless
``svc.webhooks.allow-private-addresses``.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import socket
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import quote, urlsplit, urlunsplit

import peewee

from ..data.access import utc_now
from ..db import database_proxy
from ..errors import BadRequest, Conflict, NotFound, SettingsError
from ..jsonio import JsonObject, JsonValue, dumps, loads
from ..model.datatypes import format_utc_instant
from ..model.fields import DateTimeField
from ..model.tenancy import TENANT_KEY_LENGTH
from .matching import check_unrestricted, compiled, full_permissions
from . import outbox
from .outbox import KINDS, position

if TYPE_CHECKING:
    from ..model.metadata import Metadata
    from ..security.roles import Permissions
    from ..settinggroups import WebhookSettings

GRANT = "rest.webhooks"
SETTINGS_PREFIX = "settings:"       # the id of a subscription of the settings
MIN_SECRET = 16
MAX_URL = 2048
# What a path or query keeps as written (RFC 3986 pchar, "%" of escapes already there).
_URL_SAFE = "/%:@!$&'()*+,;=-._~"
_HOST_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_ONLY_HTTP = "url: only http and https URLs"


class WebhookSubscription(peewee.Model):
    id = peewee.CharField(primary_key=True, max_length=255)
    url = peewee.CharField(max_length=2048)
    entities = peewee.TextField()                   # JSON list of entity names
    kinds = peewee.TextField()                      # JSON list of kinds
    secret = peewee.CharField(max_length=1024)
    createdDate = DateTimeField()
    after = peewee.BigIntegerField(default=0)       # events up to this id are handed out
    filterJson = peewee.TextField(null=True)        # the filter's JSON, or none
    # The registering caller's tenant (None: a global caller's, or the
    # settings'): a tenant's callers find only their tenant's subscriptions.
    tenantId = peewee.CharField(max_length=TENANT_KEY_LENGTH, null=True)

    class Meta:
        database = database_proxy
        table_name = "restsvc_webhook"


# A subscription's deliveries (delivery.py hands events out to them and sends them).
class WebhookDelivery(peewee.Model):
    seq = peewee.BigAutoField()
    subscription = peewee.CharField(max_length=255)
    eventId = peewee.BigIntegerField()
    state = peewee.CharField(max_length=16, default="pending")     # pending or dead
    attempts = peewee.IntegerField(default=0)
    firstAttempt = peewee.DoubleField()             # epoch seconds: the retry period's start
    nextAttempt = peewee.DoubleField()
    leaseUntil = peewee.DoubleField(null=True)      # claimed by a worker until then
    lastStatus = peewee.IntegerField(null=True)
    lastError = peewee.CharField(max_length=255, null=True)
    match = peewee.BooleanField(null=True)          # a filtered subscription's verdict

    class Meta:
        database = database_proxy
        table_name = "restsvc_webhook_delivery"
        indexes = ((("subscription", "eventId"), True), (("state", "nextAttempt"), False))


class Registration(NamedTuple):
    """A subscription as a registration body asks for it, checked."""
    url: str
    entities: list[str]
    kinds: list[str]
    secret: str
    filter: JsonValue = None            # a filter's JSON (one entity), or None


def as_json(row: WebhookSubscription) -> JsonObject:
    """What the API shows of a subscription: never its secret."""
    shown = {"id": row.id, "url": row.url, "entities": loads(row.entities),
             "kinds": loads(row.kinds), "createdDate": format_utc_instant(row.createdDate),
             "fromSettings": row.id.startswith(SETTINGS_PREFIX)}
    if row.filterJson is not None:
        shown["filter"] = loads(row.filterJson)
    return shown


def check_filter(metadata: Metadata, wanted: Registration, permissions: Permissions) -> None:
    """A registration's filter, compiled for ``permissions``: the search's
    400s, and 403 for a path through an entity row-level rules narrow. No
    ``:session$`` value is replaced: the deliveries are nobody's session."""
    if wanted.filter is not None:
        meta = metadata.entity(wanted.entities[0])
        assert meta is not None         # ``checked``
        check_unrestricted(compiled(meta, wanted.filter, permissions), permissions)


# -- registration ----------------------------------------------------------------
def checked(metadata: Metadata, body: JsonValue,
            allow_private: bool) -> Registration:
    """What a registration body asks for; 400 on anything wrong."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid webhook", "The body must be a JSON object")
    url, entities = body.get("url"), body.get("entities")
    kinds, secret = body.get("kinds", list(KINDS)), body.get("secret")
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise BadRequest("Invalid webhook", "url: an http or https URL is required")
    url = normalised_url(url)
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
    entities = list(dict.fromkeys(entities))
    spec = body.get("filter")
    if spec is not None and len(entities) != 1:
        raise BadRequest("Invalid webhook", "filter: a subscription with a filter names "
                                            "exactly one entity")
    check_address(url, allow_private)       # last: it asks the resolver
    return Registration(url, entities, list(dict.fromkeys(kinds)), secret, spec)


def create(database: peewee.Database, wanted: Registration,
           key: str | None = None, tenant: str | None = None) -> WebhookSubscription:
    """A new subscription (``key``: the id; ``tenant``: the registering
    caller's); it gets the events committed from now on."""
    row = WebhookSubscription.create(
        id=key or str(uuid.uuid4()), url=wanted.url, entities=dumps(wanted.entities),
        kinds=dumps(wanted.kinds), secret=wanted.secret, createdDate=utc_now(),
        after=position(database), filterJson=_filter_text(wanted), tenantId=tenant)
    return row


def _filter_text(wanted: Registration) -> str | None:
    return None if wanted.filter is None else dumps(wanted.filter)


def listed(tenant: str | None = None) -> list[WebhookSubscription]:
    """Every subscription (of ``tenant`` only, for a tenant's caller), the oldest first."""
    query = WebhookSubscription.select()
    if tenant is not None:
        query = query.where(WebhookSubscription.tenantId == tenant)
    return list(query.order_by(WebhookSubscription.createdDate))


def find(key: str, tenant: str | None = None) -> WebhookSubscription:
    """The subscription ``key``; for a tenant's caller (``tenant``) another
    tenant's or a global one answers as a missing one."""
    row = WebhookSubscription.get_or_none(WebhookSubscription.id == key)
    if row is None or (tenant is not None and row.tenantId != tenant):
        raise NotFound("Webhook not found", f"Webhook {key} not found")
    return row


def delete(key: str, tenant: str | None = None) -> None:
    row = find(key, tenant)
    if row.id.startswith(SETTINGS_PREFIX):
        raise Conflict("Webhook of the settings", "Remove it from the settings instead")
    WebhookDelivery.delete().where(WebhookDelivery.subscription == key).execute()
    row.delete_instance()


def sync_settings(database: peewee.Database, metadata: Metadata,
                  subscriptions: Iterable[WebhookSettings], allow_private: bool) -> None:
    """Write the settings' subscriptions to the table (new ones start now);
    drop those no longer in the settings."""
    names: set[str] = set()
    everything = full_permissions(metadata)
    for sub in subscriptions:
        try:
            body = {"url": sub.url, "entities": list(sub.entities), "kinds": list(sub.kinds),
                    "secret": sub.secret, "filter": loads(sub.filter) if sub.filter else None}
            wanted = checked(metadata, body, allow_private)
            check_filter(metadata, wanted, everything)
        except (BadRequest, ValueError) as exc:
            raise SettingsError(f"svc.webhooks.subscription.{sub.name}: "
                                f"{getattr(exc, 'details', exc)}") from None
        key = SETTINGS_PREFIX + sub.name
        names.add(key)
        with database.atomic():
            updated = WebhookSubscription.update(
                url=wanted.url, entities=dumps(wanted.entities), kinds=dumps(wanted.kinds),
                secret=wanted.secret, filterJson=_filter_text(wanted)).where(
                WebhookSubscription.id == key).execute()
            if not updated:
                create(database, wanted, key)
    WebhookSubscription.delete().where(
        WebhookSubscription.id.startswith(SETTINGS_PREFIX)
        & WebhookSubscription.id.not_in(list(names) or [""])).execute()


# -- dead letters ----------------------------------------------------------------
def dead_letters(subscription: str, limit: int = 1000) -> list[JsonObject]:
    """A subscription's dead letters, oldest event first, each with its event
    (None once retention has pruned it)."""
    dead = (WebhookDelivery.subscription == subscription) & (WebhookDelivery.state == "dead")
    rows = list(WebhookDelivery.select().where(dead).order_by(WebhookDelivery.eventId).limit(limit))
    events = outbox.read_ids(row.eventId for row in rows)
    return [{"eventId": row.eventId, "attempts": row.attempts, "lastStatus": row.lastStatus,
             "lastError": row.lastError, "event": marked(events.get(row.eventId), row.match)}
            for row in rows]


def marked(event: outbox.Event | None, match: bool | None) -> outbox.Event | None:
    """The event as its delivery sends it: with ``match`` for a filtered subscription."""
    if event is not None and match is not None:
        event["match"] = bool(match)
    return event


def replay(subscription: str) -> int:
    """A subscription's dead letters due again, their attempts and retry period
    starting anew; how many."""
    now = time.time()
    return int(WebhookDelivery.update(state="pending", attempts=0, firstAttempt=now,
                                      nextAttempt=now, leaseUntil=None).where(
        (WebhookDelivery.subscription == subscription) & (WebhookDelivery.state == "dead")
    ).execute())


# -- delivery --------------------------------------------------------------------
def signature(secret: str, body: bytes, timestamp: float) -> str:
    """The ``Svc-Signature`` header's value for a body sent at ``timestamp``."""
    signed = f"{int(timestamp)}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={int(timestamp)},v1={digest}"


def normalised_url(url: str) -> str:
    """``url`` as it is stored and sent: scheme in lower case, host
    IDNA-encoded, path and query percent-encoded where a request line needs
    it (non-ASCII, spaces, controls), no fragment. 400 when it cannot be sent
    (not http(s), a user name or password, a bad port or host name, too long)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise BadRequest("Invalid webhook", "url: not a valid URL (host or port)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest("Invalid webhook", _ONLY_HTTP)
    if parts.username is not None or parts.password is not None:
        raise BadRequest("Invalid webhook", "url: no user name or password in the URL "
                                            "(they would never be sent)")
    host = _host_text(parts.hostname)
    netloc = host if port is None else f"{host}:{port}"
    normal = urlunsplit((scheme, netloc, quote(parts.path, safe=_URL_SAFE),
                         quote(parts.query, safe=_URL_SAFE + "?"), ""))
    if len(normal) > MAX_URL:
        raise BadRequest("Invalid webhook", f"url: at most {MAX_URL} characters, "
                                            f"percent-encoded")
    return normal


def _host_text(hostname: str) -> str:
    """A host as a URL writes it: an IP literal (IPv6 in brackets) or an ASCII name."""
    if ":" in hostname:
        try:
            return f"[{ipaddress.IPv6Address(hostname.split('%')[0])}]"
        except ValueError:
            raise BadRequest("Invalid webhook", "url: not a valid IPv6 address") from None
    try:
        name = hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise BadRequest("Invalid webhook", "url: not a valid host name") from None
    if not _HOST_NAME.fullmatch(name):
        raise BadRequest("Invalid webhook", "url: not a valid host name")
    return name


class Destination(NamedTuple):
    """Where a URL that may be called is sent: ``address`` is the one the
    host resolved to when it was checked."""
    scheme: str
    host: str
    port: int
    address: str


def check_address(url: str, allow_private: bool) -> Destination:
    """Where a URL that may be called goes; 400 when the scheme is not
    http(s), the host does not resolve, or it resolves to a non-public
    address (unless ``allow_private``)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest("Invalid webhook", _ONLY_HTTP)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError):
        raise BadRequest("Invalid webhook", "url: the host does not resolve") from None
    addresses = [str(info[4][0]) for info in infos]
    if not allow_private:
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%")[0])
            if not ip.is_global or ip.is_multicast:
                raise BadRequest("Invalid webhook", "url: the host is a loopback, link-local "
                                                    "or private address")
    return Destination(parts.scheme, parts.hostname, port, addresses[0])
