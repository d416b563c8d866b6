"""What a token's scopes keep of its roles: the one table.

A client registered with ``scopes`` gets tokens whose roles are narrowed by
the scopes granted: ``read`` keeps what only reads, ``write`` what only
changes; what does both (registering a webhook: it creates a subscription
and its receiver then reads the changes) needs both. A token of a client
without scopes (``None``) keeps everything its roles give.

Every kind of grant is listed in ``NEEDS`` with the scopes it needs;
``Permissions`` (roles.py) works out a token's effective permissions from
it once, so every endpoint, ``/rest/permissions`` and the documents filtered
per caller follow it. A grant kind missing from the table is a startup error
(``needs`` raises KeyError), never a silent "allowed".
"""
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..settinggroups import KNOWN_SCOPES

READ, WRITE = KNOWN_SCOPES
ALL_SCOPES: frozenset[str] = frozenset(KNOWN_SCOPES)

_R: frozenset[str] = frozenset({READ})
_W: frozenset[str] = frozenset({WRITE})
_RW: frozenset[str] = frozenset({READ, WRITE})
_ANY: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Action:
    """One thing a caller may do: the grant that allows it (a specific policy,
    ``role:<code>`` for a role held by name, None for any REST caller) and
    the scopes it needs."""
    grant: str | None
    needs: frozenset[str]


# Entity operations, attribute levels, service methods and reports: granted
# by the roles' entity, attribute, service and report policies.
NEEDS: Mapping[str, frozenset[str]] = {
    "entity.create": _W, "entity.read": _R, "entity.update": _W, "entity.delete": _W,
    "attribute.view": _R, "attribute.modify": _W,
    # A service method may change data; what it reads goes through the data
    # layer with the caller's (narrowed) permissions.
    "service.call": _W,
    "report.run": _R,
}

# Specific policies and the actions under them (one grant may allow both a
# read and a write, as rest.webhooks does).
ACTIONS: Mapping[str, Action] = {
    "rest.enabled": Action("rest.enabled", _ANY),
    "rest.fileUpload.enabled": Action("rest.fileUpload.enabled", _W),
    "rest.fileDownload.enabled": Action("rest.fileDownload.enabled", _R),
    "rest.deleted.read": Action("rest.deleted.read", _R),
    "rest.deleted.restore": Action("rest.deleted.restore", _W),
    "rest.deleted.purge": Action("rest.deleted.purge", _W),
    "reports.rest.enabled": Action("reports.rest.enabled", _R),
    # The change feed: the stream and its tickets read.
    "rest.events.read": Action("rest.enabled", _R),
    # Webhooks: a subscription reads (its receiver gets the changes) and writes.
    "rest.webhooks.register": Action("rest.webhooks", _RW),
    "rest.webhooks.read": Action("rest.webhooks", _R),
    "rest.webhooks.delete": Action("rest.webhooks", _W),
    "rest.webhooks.replay": Action("rest.webhooks", _W),
    "metrics.read": Action("role:metrics-reader", _R),
    # A batch runs writes only; each operation is refused as it would be alone,
    # with its index (this entry leaves the batch out of a read token's document).
    "rest.batch": Action("rest.enabled", _W),
    # API keys (keygrants.py): one's own under rest.enabled, anyone's under
    # rest.apiKeys.manage; making or revoking one writes, listing reads.
    "rest.apiKeys.create": Action("rest.enabled", _W),
    "rest.apiKeys.read": Action("rest.enabled", _R),
    "rest.apiKeys.delete": Action("rest.enabled", _W),
    "rest.apiKeys.manage.read": Action("rest.apiKeys.manage", _R),
    "rest.apiKeys.manage.write": Action("rest.apiKeys.manage", _W),
}


def granted_scopes(scope: str | None) -> frozenset[str]:
    """A token's scopes as a set; all of them for a token without scopes."""
    return ALL_SCOPES if scope is None else frozenset(scope.split()) & ALL_SCOPES


def keeps(scopes: frozenset[str], kind: str) -> bool:
    """Whether a token with ``scopes`` keeps the grant kind ``kind`` (NEEDS)."""
    return NEEDS[kind] <= scopes


Handler = TypeVar("Handler", bound=Callable[..., object])


def checks(action: str) -> Callable[[Handler], Handler]:
    """Mark a handler that checks ``action`` (ACTIONS): the detailed OpenAPI
    document of a token whose scopes do not keep it leaves its operation out."""
    if action not in ACTIONS:
        raise KeyError(f"no action {action!r} in security/scopes.py ACTIONS")

    def mark(handler: Handler) -> Handler:
        setattr(handler, "scope_action", action)  # noqa: B010 -- a function's attribute
        return handler
    return mark
