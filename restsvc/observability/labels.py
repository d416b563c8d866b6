"""Label values that come from a request, each folded into a bounded set:
what a caller sends (an invented HTTP method, a JWT's client id) can never
add series to the metrics or names to the spans without end."""
from collections.abc import Collection

# The methods of RFC 9110 and PATCH (RFC 5789): any other folds into one value.
HTTP_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                          "TRACE", "CONNECT"))
OTHER = "other"
ANONYMOUS = "anonymous"      # the client label of a request without a token
MAX_CLIENTS = 1000           # distinct client labels kept; later ones fold into OTHER
MAX_LENGTH = 100             # characters of a label value taken from a token
GLOBAL = ""                  # the tenant label of a global (or anonymous) caller
MAX_TENANTS = 1000           # distinct tenant labels kept; later ones fold into OTHER


def method_label(method: str) -> str:
    """``method`` when it is a known HTTP method, else ``other``."""
    return method if method in HTTP_METHODS else OTHER


def client_label(client_id: str | None, known: Collection[tuple[object, ...]]) -> str:
    """The label of a caller's client: ``anonymous`` without one; a client
    id (its first ``MAX_LENGTH`` characters) while fewer than ``MAX_CLIENTS``
    are counted in ``known`` (an identity provider's tokens may name any
    number of clients), else ``other``."""
    if client_id is None:
        return ANONYMOUS
    label = client_id[:MAX_LENGTH]
    if (label,) not in known and len(known) >= MAX_CLIENTS:
        return OTHER
    return label


def tenant_label(tenant: str | None, known: Collection[tuple[object, ...]]) -> str:
    """The label of a caller's tenant: empty for a global or anonymous caller;
    the tenant's key (an enabled tenant's: the gate checked it) while fewer
    than ``MAX_TENANTS`` are counted in ``known``, else ``other``."""
    if tenant is None:
        return GLOBAL
    if (tenant,) not in known and len(known) >= MAX_TENANTS:
        return OTHER
    return tenant
